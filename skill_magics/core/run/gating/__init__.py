"""Step 2, gate: the one place that decides whether a run may start (``gate``), what a person
is asked and may answer (``approval``) and the session's approvals (``store``)."""
