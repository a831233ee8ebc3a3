"""The skill lab, a skill author's tools: check a skill, run a model with it, measure it.

- :func:`~.validation.validate_skill`: the checks of skills-ref and ours, one line per
  problem (``%skills validate``; the file checks: filechecks.py); nothing is run.
- :func:`~.agent.run_agent`: the agent loop over an Anthropic or OpenAI client (async
  clients: ``run_agent_async``), every script call through the gate; returns a
  :class:`~.transcript.Transcript`.
- :func:`~.triggers.evaluate_triggers`: how often the model activates a skill for queries
  that should (and should not) trigger it; a :class:`~.triggers.TriggerReport` in
  skill-creator's ``run_eval`` format, within hard caps on calls and tokens.
- :func:`~.evals.run_evals`: a skill's ``evals/evals.json`` run with and without the skill,
  written in the Agent Skills workspace layout (``timing.json``, ``grading.json``,
  ``benchmark.json``); an :class:`~.evals.EvalReport`.

What a caller chooses (model, runs, caps, limits) is an options object (options.py), built
once; the loops are written once and driven sync or async (drive.py).

Modules are imported on use; nothing here imports a model SDK (the client's type says which
API to speak: clients.py).
"""
