"""Step 3, launch: how a checked run's process starts (``launchers``: cold, sandboxed, warm),
is driven, captured and killed with everything it started (``process``, ``orphans``,
``cgroups``, ``containment``, ``warden``), confined (``sandbox``) and where else a process
may start at all (``spawning``, ``treeguard``)."""
