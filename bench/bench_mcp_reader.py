"""The MCP stdio reader: the SDK's against ours (prints figures; not a test).

    .venv/bin/python bench/bench_mcp_reader.py              # 2, 8 and 24 MB lines
    .venv/bin/python bench/bench_mcp_reader.py --mb 4 16    # other sizes

A process writes one JSON-RPC notification of N MB on one line; each reader (the SDK's
``mcp.client.stdio.stdio_client``, ours ``skill_magics.core.mcp.stdio.StdioTransport``) is
timed from the start of the process to the parsed message, wall and CPU (this process, both
threads of the loop), side by side, A B B A. The SDK's joins and splits its buffer for every
64 KiB chunk (quadratic in the line's length); ours looks for the line end in each new chunk.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import anyio  # noqa: E402

from skill_magics.core.mcp.stdio import StdioTransport  # noqa: E402

WRITER = """import sys
n = int(sys.argv[1])
head = '{"jsonrpc": "2.0", "method": "notifications/message", "params": {"t": "'
sys.stdout.write(head + "x" * n + '"}}\\n')
sys.stdout.flush()
sys.stdin.read()
"""


async def _first(streams: object) -> None:
    read_stream, _write = streams  # type: ignore[misc]
    message = await read_stream.receive()
    assert not isinstance(message, Exception), message


async def _sdk(argv: list[str], errlog: object) -> None:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with stdio_client(params, errlog=errlog) as streams:  # type: ignore[arg-type]
        await _first(streams)


async def _ours(argv: list[str], errlog: object) -> None:
    transport = StdioTransport(tuple(argv), env=None, cwd=None, errlog=errlog)  # type: ignore[arg-type]
    async with transport.open() as streams:
        await _first(streams)


def timed(kind: str, argv: list[str]) -> tuple[float, float]:
    with tempfile.TemporaryFile("w+") as errlog:
        wall, cpu = time.perf_counter(), time.process_time()
        anyio.run(_sdk if kind == "sdk" else _ours, argv, errlog)
        return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, nargs="*", default=[2, 8, 24])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(WRITER)
    print(
        f"Python {platform.python_version()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}; one line of N MB, read to a parsed message"
    )
    heads = ("N MB", 6), ("SDK wall", 9), ("SDK cpu", 8), ("ours wall", 10), ("ours cpu", 9)
    print(" ".join(f"{h:>{w}}" for h, w in heads), f"{'ratio':>6}")
    try:
        for kind in ("sdk", "ours"):  # imports and first use, outside the figures
            timed(kind, [sys.executable, f.name, "1000"])
        for mb in args.mb:
            argv = [sys.executable, f.name, str(int(mb * 1e6))]
            got: dict[str, list[tuple[float, float]]] = {"sdk": [], "ours": []}
            for _ in range(args.repeat):
                for kind in ("sdk", "ours", "ours", "sdk"):
                    got[kind].append(timed(kind, argv))
            sdk = [statistics.median(x) for x in zip(*got["sdk"], strict=True)]
            ours = [statistics.median(x) for x in zip(*got["ours"], strict=True)]
            print(
                f"{mb:>6g} {sdk[0]:>8.2f}s {sdk[1]:>7.2f}s {ours[0]:>9.2f}s {ours[1]:>8.2f}s "
                f"{sdk[1] / max(ours[1], 1e-3):>5.1f}x"
            )
    finally:
        os.unlink(f.name)


if __name__ == "__main__":
    main()
