"""A local HTTP server that speaks two model APIs' wire formats with SCRIPTED replies.

A test fixture, not a model: every reply comes from a Python function (or a queue) the test
wrote. It lets the real ``anthropic`` and ``openai`` SDK clients run against it unchanged:

- Anthropic Messages API: ``POST /v1/messages`` -> ``{"type": "message", "content":
  [text / tool_use blocks], "stop_reason", "usage": {"input_tokens", "output_tokens"}}``;
  errors as ``{"type": "error", "error": {"type", "message"}}``.
- OpenAI Chat Completions: ``POST /v1/chat/completions`` -> ``{"object":
  "chat.completion", "choices": [{"message": {"content", "tool_calls"}, "finish_reason"}],
  "usage": {"prompt_tokens", "completion_tokens", "total_tokens"}}``; errors as
  ``{"error": {"message", "type"}}``.

Point a client at it with ``anthropic.Anthropic(base_url=server.url, ...)`` or
``openai.OpenAI(base_url=server.url + "/v1", ...)``. ``server.calls`` records every request,
read provider-neutrally by :class:`Call` (system prompt, tools, the last user text, tool
results), so a test can check what the model was shown and what came back to it.

``demo_script`` is the rule-based script notebook 07 runs against (see its docstring).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Scripted:
    """A scripted answer: text and/or tool calls (name, input); or an HTTP error ``status``
    with ``error`` text; sent after ``delay`` seconds. ``stop`` overrides the stop reason
    ("end", "tool", "length"); token counts default to len(JSON)/4."""

    text: str = ""
    tool_calls: tuple[tuple[str, Any], ...] = ()
    status: int = 200
    error: str = ""
    delay: float = 0.0
    stop: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    raw: bytes | None = None  # sent as the 200 reply's body as is (a broken provider)
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()  # sent with the reply (e.g. retry-after)


def say(text: str, **kw: Any) -> Scripted:
    return Scripted(text=text, **kw)


def call(name: str, input: Any = None, *, text: str = "", **kw: Any) -> Scripted:
    return Scripted(text=text, tool_calls=((name, {} if input is None else input),), **kw)


@dataclass
class Call:
    """One request the server received, read the same way for both APIs."""

    provider: str  # "anthropic" or "openai"
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)  # when the server received it

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def system(self) -> str:
        if self.provider == "anthropic":
            system = self.body.get("system", "")
            if isinstance(system, list):
                return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
            return str(system or "")
        return "\n".join(
            _text(m.get("content")) for m in self.body.get("messages", []) if m["role"] == "system"
        )

    @property
    def tools(self) -> dict[str, str]:
        """Tool name -> description, as the request defined them."""
        out = {}
        for tool in self.body.get("tools", []) or []:
            spec = tool.get("function", tool)
            out[spec["name"]] = spec.get("description", "")
        return out

    @property
    def tool_schemas(self) -> dict[str, Any]:
        out = {}
        for tool in self.body.get("tools", []) or []:
            spec = tool.get("function", tool)
            out[spec["name"]] = spec.get("input_schema", spec.get("parameters"))
        return out

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m for m in self.body.get("messages", []) if m.get("role") != "system"]

    @property
    def prompt(self) -> str:
        """The first user message's text."""
        for m in self.messages:
            if m["role"] == "user":
                return _text(m.get("content"))
        return ""

    @property
    def turn(self) -> int:
        """1 for the first request of a conversation, 2 after one assistant reply, ..."""
        return 1 + sum(1 for m in self.messages if m["role"] == "assistant")

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The results sent back with this request: ``{"id", "content", "is_error"}``."""
        msgs = self.messages
        if self.provider == "anthropic":
            last = msgs[-1] if msgs else {}
            content = last.get("content")
            if last.get("role") != "user" or not isinstance(content, list):
                return []
            return [
                {
                    "id": b["tool_use_id"],
                    "content": _text(b.get("content")),
                    "is_error": bool(b.get("is_error")),
                }
                for b in content
                if b.get("type") == "tool_result"
            ]
        out = []
        for m in reversed(msgs):
            if m["role"] != "tool":
                break
            text = _text(m.get("content"))
            out.append(
                {"id": m["tool_call_id"], "content": text, "is_error": text.startswith("Error:")}
            )
        return list(reversed(out))

    @property
    def calls_made(self) -> list[tuple[str, Any]]:
        """(name, input) of every tool call the assistant made earlier in the conversation."""
        out = []
        for m in self.messages:
            if m["role"] != "assistant":
                continue
            if self.provider == "anthropic":
                for b in m.get("content") or []:
                    if isinstance(b, dict) and b.get("type") == "tool_use":
                        out.append((b["name"], b.get("input")))
            else:
                for c in m.get("tool_calls") or []:
                    out.append((c["function"]["name"], json.loads(c["function"]["arguments"])))
        return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text(b.get("text", b.get("content", ""))) if isinstance(b, dict) else str(b)
            for b in content
        )
    return "" if content is None else str(content)


Script = Callable[[Call], Scripted]


class ScriptedServer:
    """The server; use as a context manager (``with ScriptedServer(script) as server``)."""

    def __init__(self, script: Script | None = None) -> None:
        self.script = script
        self.calls: list[Call] = []
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------------------

    def queue(self, *replies: Scripted) -> None:
        """Replies used in order before the script is asked."""
        with self._lock:
            self._queue.extend(replies)

    def _reply_for(self, call: Call) -> Scripted:
        with self._lock:
            self.calls.append(call)
            if self._queue:
                return self._queue.popleft()
        if self.script is None:
            return Scripted(status=500, error="the test scripted no reply for this request")
        return self.script(call)

    # -- running -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start the server first"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ScriptedServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?", 1)[0]
                if path.endswith("/v1/messages"):
                    provider = "anthropic"
                elif path.endswith("/chat/completions"):
                    provider = "openai"
                else:
                    self._send(404, {"error": {"message": f"no route {path}"}})
                    return
                call = Call(provider, body, {k.lower(): v for k, v in self.headers.items()})
                reply = server._reply_for(call)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.raw is not None:
                    self._send_raw(reply.status, reply.content_type, reply.raw)
                    return
                if reply.status != 200:
                    self._send(reply.status, _error_body(provider, reply), reply.headers)
                    return
                make = _anthropic_body if provider == "anthropic" else _openai_body
                self._send(200, make(body, reply, next(server._ids)))

            def _send(self, status: int, payload: dict[str, Any], headers: tuple = ()) -> None:
                data = json.dumps(payload).encode()
                self._send_raw(status, "application/json", data, headers)

            def _send_raw(
                self, status: int, content_type: str, data: bytes, headers: tuple = ()
            ) -> None:
                try:
                    self.send_response(status)
                    for name, value in headers:
                        self.send_header(name, value)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout): nothing to answer

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False  # a handler still sleeping for a timeout test is dropped
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- wire formats -----------------------------------------------------------------------------


def _tokens(reply: Scripted, body: dict[str, Any]) -> tuple[int, int]:
    out_text = reply.text + json.dumps([list(c) for c in reply.tool_calls])
    inp = reply.input_tokens if reply.input_tokens is not None else len(json.dumps(body)) // 4
    out = reply.output_tokens if reply.output_tokens is not None else max(1, len(out_text) // 4)
    return inp, out


def _anthropic_body(body: dict[str, Any], reply: Scripted, n: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for i, (name, input) in enumerate(reply.tool_calls):
        content.append(
            {"type": "tool_use", "id": f"toolu_{n:04d}_{i}", "name": name, "input": input}
        )
    stop = {"end": "end_turn", "tool": "tool_use", "length": "max_tokens"}.get(
        reply.stop or ("tool" if reply.tool_calls else "end"), reply.stop
    )
    inp, out = _tokens(reply, body)
    return {
        "id": f"msg_{n:06d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": inp, "output_tokens": out},
    }


def _openai_body(body: dict[str, Any], reply: Scripted, n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{n:04d}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(input)},
            }
            for i, (name, input) in enumerate(reply.tool_calls)
        ]
    finish = {"end": "stop", "tool": "tool_calls", "length": "length"}.get(
        reply.stop or ("tool" if reply.tool_calls else "end"), reply.stop
    )
    inp, out = _tokens(reply, body)
    return {
        "id": f"chatcmpl-{n:06d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out},
    }


def _error_body(provider: str, reply: Scripted) -> dict[str, Any]:
    message = reply.error or f"scripted HTTP {reply.status}"
    if provider == "anthropic":
        kind = "overloaded_error" if reply.status == 529 else "api_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}


# -- a rule-based script for the demo notebook --------------------------------------------------

_WORD = re.compile(r"[a-z][a-z0-9]{2,}")
STOPWORDS = frozenset(
    "the and for are but not you all any can had her was one our out use when with this that "
    "from have what how into your some them than then there these they will just its about "
    "more also only such".split()
)
_ENTRY = re.compile(r"<name>\s*(.*?)\s*</name>\s*<description>\s*(.*?)\s*</description>", re.S)


def catalog(system: str) -> dict[str, str]:
    """Skill name -> description, read from the ``<available_skills>`` block it was sent."""
    return {name: desc for name, desc in _ENTRY.findall(system)}


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def chosen_skill(call: Call, min_overlap: int = 2) -> str | None:
    """The skill whose catalog description shares the most words (at least ``min_overlap``)
    with the prompt: a deterministic stand-in for a model's choice, driven by exactly the
    catalog the request carried (so a changed description changes the outcome)."""
    best, score = None, 0
    for name, description in catalog(call.system).items():
        overlap = len(words(call.prompt) & words(description))
        if overlap > score:
            best, score = name, overlap
    return best if score >= min_overlap else None


_NUMBER = re.compile(r"(-?\d+(?:\.\d+)?)\s*(km|mi|miles?|kg|lb|pounds?|c|f|°c|°f|l|gal)\b", re.I)
_UNITS = {"mile": "mi", "miles": "mi", "pound": "lb", "pounds": "lb", "°c": "C", "°f": "F"}
_TARGETS = {"km": "mi", "mi": "km", "kg": "lb", "lb": "kg", "C": "F", "F": "C", "l": "gal"}


def demo_script(call: Call) -> Scripted:
    """What notebook 07's local server answers (rule-based, so the notebook runs without a
    paid model; the notebook says so in its first cell):

    - a grading request (its system prompt asks to grade expectations): each expectation
      passes when the first number or quoted text in it appears in the material sent;
    - turn 1: activate the skill whose catalog description best matches the prompt (see
      :func:`chosen_skill`), else answer without skills;
    - after ``<skill_content>`` of unit-converter: call its convert script with the value
      and unit found in the prompt;
    - after a script result: answer with it (an error result is reported as such).
    """
    if "grade" in call.system.lower() and "expectations" in call.system.lower():
        return say(json.dumps(_grade(call.prompt)))
    results = call.tool_results
    if not results:
        skill = chosen_skill(call)
        if skill is None:
            return say(_guess(call.prompt))
        return call_tool("activate_skill", {"name": skill})
    last = results[-1]
    if "<skill_content" in last["content"] and not last["is_error"]:
        match = _NUMBER.search(call.prompt)
        if match and "unit-converter__convert" in call.tools:
            unit = _UNITS.get(match.group(2).lower(), match.group(2))
            unit = unit.upper() if unit.lower() in ("c", "f") else unit.lower()
            target = _TARGETS.get(unit, "mi")
            value = float(match.group(1))
            return call_tool(
                "unit-converter__convert",
                {"argv": ["--value", f"{value:g}", "--from", unit, "--to", target]},
            )
        return say("I read the skill's instructions, but this task needs none of its scripts.")
    if last["is_error"]:
        return say(f"The script could not run: {last['content'].strip()[:200]}")
    try:
        data = json.loads(last["content"])
        return say(
            f"{data['value']:g} {data['from']} is {data['result']:g} {data['to']} "
            "(computed by the unit-converter skill)."
        )
    except (ValueError, KeyError, TypeError):
        return say(f"The script answered: {last['content'].strip()[:200]}")


def call_tool(name: str, input: Any) -> Scripted:
    return Scripted(tool_calls=((name, input),))


def _guess(prompt: str) -> str:
    match = _NUMBER.search(prompt)
    if match:
        return f"Roughly {float(match.group(1)):g} {match.group(2)}; I did not compute it exactly."
    return "I can answer that without any skill."


_CLAIM = re.compile(r"'([^']+)'|\"([^\"]+)\"|(-?\d+(?:\.\d+)?)")


def _grade(material: str) -> dict[str, Any]:
    """Expectations listed as ``N. text`` under '## Expectations' in the grading prompt."""
    head, _, tail = material.partition("## Expectations")
    body = head.partition("## Transcript")[2]  # what the run did, not the task's wording
    found = []
    for line in tail.splitlines():
        m = re.match(r"\s*\d+\.\s+(.*)", line)
        if not m:
            continue
        text = m.group(1).strip()
        claim = _CLAIM.search(text)
        needle = next((g for g in claim.groups() if g), None) if claim else None
        passed = bool(needle) and needle in body
        evidence = (
            f"found {needle!r} in the transcript or outputs"
            if passed
            else f"{needle!r} does not appear in the transcript or outputs"
        )
        found.append({"text": text, "passed": passed, "evidence": evidence})
    return {"expectations": found, "claims": []}


__all__ = [
    "Call",
    "Scripted",
    "ScriptedServer",
    "call",
    "call_tool",
    "catalog",
    "chosen_skill",
    "demo_script",
    "say",
    "words",
]
