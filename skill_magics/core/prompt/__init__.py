"""What a model sees and calls (docs/architecture.md, section 5).

``context.py`` (the ``<skill_context>`` envelope), ``available_skills.py`` (the
``<available_skills>`` block), ``activation.py`` (``<skill_content>``), ``tools.py`` (tool
definitions and calls), and the text rules they share: ``xmltext.py``, ``tokens.py``.
"""
