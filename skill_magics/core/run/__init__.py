"""Running a script, in three stages: ``planning`` (plan over checks) -> ``gating`` (the gate,
approval) -> ``launching`` (launchers, process, sandbox, warm), composed by the call site
(``pipeline.py``) and the executor (``executor.py``: launch, caps, audit); ``batch`` and
``env`` beside them."""
