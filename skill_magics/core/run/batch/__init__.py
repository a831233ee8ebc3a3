"""Batches: one script over many inputs, through one approval
(docs/architecture.md, *Batch runs*).

``runner.py`` plans and runs a batch (:class:`~.runner.BatchPlan`, the thread pool, a
caller's pool, the code watch), ``backends.py`` where its items run (here, or shipped) and
its bounded audit, ``result.py`` is what it returns (:class:`~.result.BatchResult`),
``ship.py``, ``ship_area.py`` and ``ship_owner.py`` pack the approved skill for items that run
in another process or on a Dask worker, ``dask_backend.py`` talks to Dask.
"""
