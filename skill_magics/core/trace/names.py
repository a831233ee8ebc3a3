"""The attribute names spans carry, in one place (docs/tracing.md lists them).

``gen_ai.*`` names follow the OpenTelemetry GenAI semantic conventions. The ``gen_ai.skill.*``
ones are DRAFT (semantic-conventions-genai PR #498 ``gen_ai.skill.name``; the script names of
PR #463, split into #499/#500, under review): they may be renamed before they are stable, and
this module is where they change. Everything else skill_magics needs has its own prefix,
``skill_magics.*``, so it never collides with a convention.

No name here carries an argument value, an output or a secret: only names, digests, counts,
sizes, codes and times (the values are redacted once more when a span is recorded).
"""

from __future__ import annotations

# -- GenAI semantic conventions (gen_ai.operation.name etc. are in the registry) ------------
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"

# -- DRAFT: gen_ai.skill.* (semantic-conventions-genai PR #498, #463/#499/#500) ---------------
SKILL_NAME = "gen_ai.skill.name"  # PR #498
SCRIPT_PATH = "gen_ai.skill.script.path"  # PR #463 (review: maybe process.executable.path)
SCRIPT_EXIT_CODE = "gen_ai.skill.script.exit_code"  # PR #463
SCRIPT_EXITED_WITH_ERROR = "gen_ai.skill.script.exited_with_error"  # PR #463

DRAFT = (SKILL_NAME, SCRIPT_PATH, SCRIPT_EXIT_CODE, SCRIPT_EXITED_WITH_ERROR)

# -- general (stable) ---------------------------------------------------------------------------
ERROR_TYPE = "error.type"  # the class of the error a span failed with (a refusal's)

# -- MCP (the GenAI conventions' MCP page) ----------------------------------------------------
MCP_METHOD = "mcp.method.name"

# -- skill_magics' own -------------------------------------------------------------------------
CALL = "skill_magics.call"  # what the root is: run, map, context, install, env, scope, agent
CALLER = "skill_magics.caller"  # "person" or "model" (docs/architecture.md, *Who approves*)
SKILLS = "skill_magics.skills"  # every skill a root or an approval covers
ORIGIN = "skill_magics.origin"  # "local", or the MCP server's label
BATCH_ITEMS = "skill_magics.batch.items"
BATCH_INDEX = "skill_magics.batch.index"
BATCH_WHERE = "skill_magics.batch.where"  # "process pool" or "dask": items run elsewhere
BATCH_WORKER = "skill_magics.batch.worker"  # the worker that ran the item (address or host:pid)
DECISION = "skill_magics.approval.decision"  # yes_once, yes_in_session, no; or the status
DECIDED_BY = "skill_magics.approval.by"  # who or what decided ("session approval", ...)
WAIT_MS = "skill_magics.approval.wait_ms"  # how long the approver took
DIGESTS = "skill_magics.approval.digests"  # the skills' fingerprints the decision is bound to
STATUS = "skill_magics.status"  # the RunStatus of a run (completed, failed, timeout, ...)
START = "skill_magics.run.start"  # "cold" or "warm"
START_NOTE = "skill_magics.run.start_note"  # why not warm
SANDBOX = "skill_magics.sandbox.mode"  # the sandbox profile's mode ("off": none)
NETWORK = "skill_magics.sandbox.network"
SIGNAL = "skill_magics.run.signal"
TIMED_OUT = "skill_magics.run.timed_out"
DURATION_MS = "skill_magics.run.duration_ms"
STDOUT_BYTES = "skill_magics.run.stdout_bytes"
STDERR_BYTES = "skill_magics.run.stderr_bytes"
INTERPRETER = "skill_magics.run.interpreter"
PACKAGES = "skill_magics.env.packages"  # how many packages an environment build installs
INSTALLER = "skill_magics.env.installer"
PRELOAD = "skill_magics.warm.preload"  # the packages a warm server imports before any run
MCP_SERVER = "skill_magics.mcp.server"
MCP_BYTES = "skill_magics.mcp.bytes"
MCP_VERIFIED = "skill_magics.mcp.verified"  # a read's bytes matched the listing's digest and size
MCP_REFUSED = "skill_magics.mcp.refused"  # the call failed or its answer was refused
# Content: only for a call that opted in (trace_content=True, --trace-content), redacted first.
CONTENT = "skill_magics.trace.content"  # on a root: this call's runs record content
RUN_INPUT = "skill_magics.run.input"  # the JSON a script got on stdin
RUN_ARGV = "skill_magics.run.argv"  # its command-line arguments
RUN_STDOUT = "skill_magics.run.stdout"  # what it printed (as captured: secrets masked)
RUN_STDERR = "skill_magics.run.stderr"
TOOL_CALLS = "skill_magics.gen_ai.tool_calls"  # how many tool calls a model's reply made
TOOL_NAMES = "skill_magics.gen_ai.tool_names"
