"""Running a script: plan (plan.py over checks.py) -> the call site (pipeline.py): gate
(gate.py, approval) -> execute (executor.py: launch, caps, audit)."""
