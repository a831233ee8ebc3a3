"""Running a script: plan (checks) -> gate (approval) -> execute (process group, caps, audit)."""
