"""Many concurrent SSE runs against one server process: ``python -m benchmarks.serve [--runs 1000] [--words 20]
[--disconnects 100] [--quick] [--json]``.

Starts ``batonflow.server.create_app`` on uvicorn in a process of its own on loopback, serving an agent on a scripted
model (``FunctionModel``: an answer of ``--words`` words, streamed a word per delta) and one whose model never
answers. Then all ``--runs`` clients start at once, each on a connection of its own (a small HTTP/1.1 client on
asyncio streams, so that the clients cost little next to the server), ask for a streamed run and read it to its
``end`` event. Prints how many completed, the p50 and p99 time to the first event (from the moment all started, so
it includes the wait for the server), the wall time, and the server's peak RSS (``VmHWM``). Then ``--disconnects``
clients start a run on the agent that never answers, read its first event and hang up: the server must cancel
every one of them, which ``/health`` (``active_runs``) has to show within seconds; the number still going is printed
as ``left_behind``.

The server's CPU time (user + system, from ``/proc``) over the streamed runs, per run, is printed beside that of a
raw ASGI app on the same uvicorn answering each run with the same SSE stream (the same frames, as bytes it made
beforehand): the floor, what HTTP and SSE cost before batonflow does anything.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

HOST = "127.0.0.1"


def app(words: int) -> Any:
    from batonflow import ChatModelAgent
    from batonflow.schema import assistant
    from batonflow.server import ServerLimits, create_app
    from batonflow.testing import FunctionModel

    answer = " ".join(f"word{i}" for i in range(words))
    scripted = ChatModelAgent(name="scripted", model=FunctionModel(lambda messages, tools: assistant(answer)))

    async def never(messages: Any, tools: Any) -> Any:
        await asyncio.Event().wait()

    stuck = ChatModelAgent(name="stuck", model=FunctionModel(never))
    return create_app([scripted, stuck], limits=ServerLimits(max_active_runs=100_000, heartbeat=5.0))


def raw_app(words: int) -> Any:
    """An ASGI app that answers ``POST /runs`` with the SSE stream the batonflow app sends for the scripted run (a
    ``run`` frame, ``message_start``, a delta per word, the message, ``end``), made once: the floor."""
    frames = [("run", {"run_id": "r", "agent": "scripted"}), ("message_start", {"seq": 1, "role": "assistant"})]
    frames += [("delta", {"seq": 1, "content": f"word{i} "}) for i in range(words)]
    answer = " ".join(f"word{i}" for i in range(words))
    frames += [("message", {"seq": 1, "message": {"role": "assistant", "content": answer}})]
    frames += [("end", {"run_id": "r", "status": "completed", "text": answer})]
    chunks = [f"id: {i}-0\r\nevent: {e}\r\ndata: {json.dumps(d)}\r\n\r\n".encode() for i, (e, d) in enumerate(frames)]
    headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-store")]

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        while (await receive()).get("more_body"):
            pass
        if scope["path"] == "/health":
            body = json.dumps({"status": "ok", "active_runs": 0}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return asgi


def _raise_file_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def serve(port: int, words: int, raw: bool = False) -> None:
    import uvicorn

    _raise_file_limit()
    served = raw_app(words) if raw else app(words)
    gc.freeze()  # as batonflow serve does once its app is made (either app: the floor is measured alike)
    uvicorn.run(served, host=HOST, port=port, log_level="warning", access_log=False, backlog=4096)


def _request(method: str, path: str, body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


async def stream_run(port: int, agent: str, start: float, *, hang_up: bool = False) -> tuple[float | None, bool]:
    """One streamed run: the seconds from ``start`` to its first event, and whether it ended completed."""
    reader, writer = await asyncio.open_connection(HOST, port)
    body = json.dumps({"agent": agent, "input": "go", "stream": True}).encode()
    writer.write(_request("POST", "/runs", body))
    first: float | None = None
    completed = False
    ending = False
    try:
        async for line in reader:
            if first is None and line.startswith(b"event:"):
                first = time.perf_counter() - start
                if hang_up:
                    break
            if line.startswith(b"event: end"):
                ending = True
            elif ending and line.startswith(b"data:"):
                completed = json.loads(line[5:])["status"] == "completed"
                break
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return first, completed


async def health(port: int) -> dict[str, Any]:
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(_request("GET", "/health"))
    data = await reader.read()
    writer.close()
    return dict(json.loads(data.split(b"\r\n\r\n", 1)[1]))


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def measure(port: int, pid: int, runs: int, disconnects: int) -> dict[str, Any]:
    cpu = cpu_seconds(pid)
    start = time.perf_counter()
    results = await asyncio.gather(*(stream_run(port, "scripted", start) for _ in range(runs)))
    wall = time.perf_counter() - start
    cpu = cpu_seconds(pid) - cpu
    firsts = sorted(f for f, _ in results if f is not None)
    completed = sum(1 for _, done in results if done)
    start = time.perf_counter()
    await asyncio.gather(*(stream_run(port, "stuck", start, hang_up=True) for _ in range(disconnects)))
    deadline = time.perf_counter() + 10
    active = (await health(port))["active_runs"]
    while active and time.perf_counter() < deadline:
        await asyncio.sleep(0.02)
        active = (await health(port))["active_runs"]
    quantiles = statistics.quantiles(firsts, n=100, method="inclusive") if len(firsts) > 1 else firsts * 99
    return {
        "runs": runs,
        "completed": completed,
        "first_event_p50_ms": round(quantiles[49] * 1000, 1) if firsts else None,
        "first_event_p99_ms": round(quantiles[98] * 1000, 1) if firsts else None,
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(peak_rss_mb(pid), 1),
        "server_cpu_us_per_run": round(cpu / runs * 1e6),
        "disconnects": disconnects,
        "left_behind": active,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def render(figures: dict[str, Any]) -> list[str]:
    """A Markdown table of the figures: completed streamed runs, time to first event, wall time, the server's peak
    RSS, and the hung-up runs it left going."""
    floor = figures.get("raw_asgi_cpu_us_per_run")
    ratio = "" if not floor else f" ({figures['server_cpu_us_per_run'] / floor:.1f} times the floor)"
    return [
        f"{figures['runs']} concurrent streamed runs (one server process, a connection per client), then "
        f"{figures['disconnects']} clients that hang up after the first event:",
        "",
        "| completed | p50 first event (ms) | p99 first event (ms) | wall (s) | server peak RSS (MB) | left behind |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {figures['completed']} of {figures['runs']} | {figures['first_event_p50_ms']} | "
        f"{figures['first_event_p99_ms']} | {figures['wall_s']} | {figures['peak_rss_mb']} | "
        f"{figures['left_behind']} of {figures['disconnects']} |",
        "",
        f"Server CPU per streamed run: {figures['server_cpu_us_per_run']} µs; a raw ASGI app answering the same SSE "
        f"stream on the same uvicorn: {floor} µs{ratio}.",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, help="concurrent streamed runs (default 1000; --quick 200)")
    parser.add_argument("--words", type=int, default=20)
    parser.add_argument("--disconnects", type=int, help="clients that hang up (default 100; --quick 20)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: fewer runs and disconnects")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument("--server", type=int, metavar="PORT", help=argparse.SUPPRESS)  # the server process
    parser.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)  # the server is the raw ASGI floor
    args = parser.parse_args(argv)
    if args.server:
        serve(args.server, args.words, args.raw)
        return
    runs = args.runs if args.runs is not None else 200 if args.quick else 1000
    disconnects = args.disconnects if args.disconnects is not None else 20 if args.quick else 100
    _raise_file_limit()
    floor = _served(args.words, runs, 0, raw=True)["server_cpu_us_per_run"]
    figures = {**_served(args.words, runs, disconnects), "raw_asgi_cpu_us_per_run": floor}
    print(json.dumps(figures) if args.json else "\n".join(render(figures)))


def _served(words: int, runs: int, disconnects: int, *, raw: bool = False) -> dict[str, Any]:
    """The figures of one server process (the batonflow app, or the raw floor), started for them and stopped."""
    port = _free_port()
    command = [sys.executable, "-m", "benchmarks.serve", "--server", str(port), "--words", str(words)]
    server = subprocess.Popen([*command, *(["--raw"] if raw else [])], env={**os.environ})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection((HOST, port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the server did not start") from None
                time.sleep(0.05)
        return asyncio.run(measure(port, server.pid, runs, disconnects))
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(30)


if __name__ == "__main__":
    main()
