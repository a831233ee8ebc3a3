"""The magics, one module per magic: ``%skills`` and the configuration (skills.py),
``%%skillrun`` (skillrun.py), ``%skill_context`` (context.py), ``%%skillpy`` (skillpy.py), and
the await rewrite that lets a cell wait for a click (rewrite.py). extension.py wires them."""
