"""``python -m benchmarks [--quick]``: batonflow's framework overhead against its peers, in one run.

Each framework runs in its own subprocesses (one per round of W1–W4 and W6, a fresh one for W5), one framework at
a time, so that no framework's imports, caches or garbage slow another down. The table gives, per workload, the
fastest peer of this run and batonflow's time divided by that peer's; the targets are 1/30 for W1, W2 and W4 and
0.1 for the other rows. Sections of batonflow's own figures follow: its growth curve (``benchmarks.growth``), what
one interrupt + resume and one conversation turn cost at turn 10, 100, 1,000 and 2,000; the graph engines
(``benchmarks.graph``), batonflow's ``FlowEngine`` beside LangGraph's ``StateGraph`` on a 100-node chain and a
10-way fan-out and join, per run, per node visit and per superstep; teams (``benchmarks.team``), µs per
supervisor turn of a ``TeamAgent`` beside a LangGraph supervisor graph; a persisted conversation of 20 turns
(``benchmarks.conversation``), batonflow's SQLite session store beside Microsoft Agent Framework's file-backed
history; serving (``benchmarks.serve``), many
concurrent SSE runs against one server process; and scale-out (``benchmarks.scale``), 400 concurrent runs on two
``batonflow worker`` processes over PostgreSQL and Redis beside the same runs in-process (skipped, saying why, when
PostgreSQL or Redis does not answer on loopback).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ._common import WORKLOADS

MODULES = ["bf", "langgraph_peer", "adk_peer", "agents_sdk_peer", "maf_peer", "pydantic_ai_peer"]
"""One module per framework; each imports its framework only inside ``build()``."""
FRAMEWORKS = {m: importlib.import_module(f"benchmarks.{m}").NAME for m in MODULES}
SUBJECT = "bf"
HEADLINE = 1 / 30
"""The overhead target of W1, W2 and W4: batonflow at most 1/30 of the fastest peer measured in the same run."""
TARGET = 0.1
"""The target of the other compared rows."""
RESULTS = Path(__file__).parent / "results"

# (row label, workload name, result field, digits, target: None for a row that is context, not compared);
# {clock} is "wall" or "cpu" and picks the field: perf_counter or process CPU time.
ROWS = [
    ("W1 single turn ({clock} µs/run)", "W1", "{clock}_median", 1, HEADLINE),
    ("  fake model alone, one call ({clock} µs)", "W1", "fake_{clock}_median", 1, None),
    ("W2 10-step tool loop ({clock} µs/step)", "W2", "{clock}_median", 1, HEADLINE),
    ("W3 transfer root→A→B ({clock} µs/run)", "W3", "{clock}_median", 1, TARGET),
    ("W4 2000-chunk stream, net of the fake ({clock} µs/chunk)", "W4", "{clock}_median", 2, HEADLINE),
    ("  gross, fake model included ({clock} µs/chunk)", "W4", "gross_{clock}_median", 2, None),
    ("  fake model alone, subtracted ({clock} µs/chunk)", "W4", "fake_{clock}_median", 2, None),
    ("W5 {n} concurrent turns ({clock} s)", "W5", "{clock}_s", 3, TARGET),
    ("W5 peak RSS growth (MB)", "W5", "rss_growth_mb", 1, TARGET),
    # Context, not a target: mostly what the framework imports.
    ("W5 peak RSS, total (MB)", "W5", "peak_rss_mb", 1, None),
    ("W6 3-branch parallel + agent tools ({clock} µs/run)", "W6", "{clock}_median", 1, TARGET),
]


def run_worker(module: str, *options: str) -> dict[str, Any]:
    """One worker subprocess; a crash or a bad result becomes a "failed" report instead of stopping the run."""
    command = [sys.executable, "-m", "benchmarks._worker", module, *options]
    cwd = Path(__file__).resolve().parent.parent  # -m puts it on the path
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        return {"name": FRAMEWORKS[module], "status": "failed", "detail": "timed out after 600 s"}
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return {"name": FRAMEWORKS[module], "status": "failed", "detail": tail[0]}
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def collect(
    modules: list[str], workloads: list[str], *, quick: bool, concurrency: int, rounds: int
) -> dict[str, dict[str, Any]]:
    """The sequential ``workloads`` (W1–W4, W6) in ``rounds`` rounds over all frameworks, then W5 once per
    framework if it is among them.

    Rounds spread each framework's measurements over time, so that a burst of other work on the machine does not
    land on one framework alone; each workload keeps its best round (lowest median), per clock.
    """
    mode = ["--quick"] if quick else []
    sequential = [w for w in workloads if w != "W5"]
    reports: dict[str, dict[str, Any]] = {}
    for round in range(rounds if sequential else 1):
        for module in modules:
            if round and reports[module]["status"] != "ok":
                continue
            started = time.monotonic()
            print(f"  round {round + 1}: {FRAMEWORKS[module]} …", end="", flush=True, file=sys.stderr)
            report = run_worker(module, *mode, "--workloads", ",".join(sequential))
            print(f" {report['status']} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
            if module not in reports or report["status"] != "ok":
                reports[module] = {**report, "rounds": [report.get("results")]}
            else:
                reports[module]["rounds"].append(report["results"])
    for module, report in reports.items():
        if report["status"] != "ok":
            continue
        rounds_ok = report["rounds"]
        report["results"] = {w: _best([r[w] for r in rounds_ok]) for w in rounds_ok[0]} if sequential else {}
        if "W5" not in workloads:
            continue
        started = time.monotonic()
        print(f"  W5: {FRAMEWORKS[module]} …", end="", flush=True, file=sys.stderr)
        w5 = run_worker(module, "--concurrent", str(concurrency), *mode)
        print(f" {w5['status']} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
        if w5["status"] == "ok":
            report["results"]["w5_concurrent"] = w5["results"]
        else:
            report["w5_detail"] = w5.get("detail", w5["status"])
    return reports


def run_probe(module: str, label: str, quick: bool) -> dict[str, Any]:
    """``benchmarks.<module> --json`` (one of ``PROBES``) in its own subprocess; a failure becomes
    a "failed" report, as for the frameworks."""
    command = [sys.executable, "-m", f"benchmarks.{module}", "--json", *(["--quick"] if quick else [])]
    cwd = Path(__file__).resolve().parent.parent
    print(f"  {label} …", end="", flush=True, file=sys.stderr)
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        print(" failed", file=sys.stderr)
        return {"status": "failed", "detail": "timed out after 600 s"}
    if done.returncode != 0:
        print(" failed", file=sys.stderr)
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return {"status": "failed", "detail": tail[0]}
    print(f" ok ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    return {"status": "ok", "results": json.loads(done.stdout.strip().splitlines()[-1])}


PROBES = [
    ("growth", "growth curve", "batonflow's growth curve (python -m benchmarks.growth)"),
    (
        "graph",
        "graph engines",
        "Graph engines: batonflow's FlowEngine and LangGraph's StateGraph (python -m benchmarks.graph)",
    ),
    ("team", "teams", "Teams: batonflow's TeamAgent and a LangGraph supervisor graph (python -m benchmarks.team)"),
    (
        "conversation",
        "persisted conversation",
        "A persisted 20-turn conversation: batonflow's SqliteSessionStore beside MAF's FileHistoryProvider "
        "(python -m benchmarks.conversation)",
    ),
    ("serve", "serving", "Serving: concurrent SSE runs against one server process (python -m benchmarks.serve)"),
    ("scale", "scale-out", "Scale-out: runs on a pool of workers, DBOS beside in-process (python -m benchmarks.scale)"),
]
"""The probes that follow the table, batonflow's own figures: (module, label while it runs, section title). Each
module has ``--json``, ``--quick`` and ``render(results) -> list[str]``."""


def section(module: str, report: dict[str, Any]) -> list[str]:
    """The lines of a probe's section: its figures rendered by ``benchmarks.<module>.render``, or why there are
    none (it failed; a probe may also render that it skipped, as scale-out does without PostgreSQL)."""
    if report["status"] != "ok":
        return [f"failed: {report['detail']}"]
    render = importlib.import_module(f"benchmarks.{module}").render  # here: the parent imports no framework up front
    lines: list[str] = render(report["results"])
    return lines


def _best(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the lowest wall-clock median, and the lowest CPU median of all rounds."""
    best = dict(min(results, key=lambda r: r["wall_median"]))
    best["cpu_median"] = min(r["cpu_median"] for r in results)
    return best


def value(report: dict[str, Any], workload: str, field: str) -> float | None:
    result = report.get("results", {}).get(WORKLOADS[workload])
    return None if result is None or field not in result else float(result[field])


def table(
    reports: dict[str, dict[str, Any]], workloads: list[str], concurrency: int, clock: str
) -> tuple[list[str], list[list[str]], dict[str, tuple[float, float]]]:
    """Header, rows, and (batonflow ÷ fastest peer, target) for each compared row that has both sides."""
    modules = list(reports)
    peers = [m for m in modules if m != SUBJECT]
    header = ["workload", *(FRAMEWORKS[m] for m in modules), "fastest peer", "batonflow ÷ fastest", "target"]
    rows, ratios = [], {}
    for label, workload, field, digits, target in ROWS:
        if workload not in workloads or (clock != "wall" and "{clock}" not in field):
            continue  # memory rows once, in the wall-clock table
        label = label.format(n=concurrency, clock=clock)
        field = field.format(clock=clock)
        cells = [label]
        for module in modules:
            report = reports[module]
            number = value(report, workload, field)
            cells.append(f"{number:,.{digits}f}" if number is not None else _absent(report, workload, target))
        ours = value(reports[SUBJECT], workload, field) if SUBJECT in reports else None
        theirs = [(v, FRAMEWORKS[m]) for m in peers if (v := value(reports[m], workload, field)) is not None]
        if target is None or ours is None or not theirs:
            cells += ["", "", ""]
        else:
            fastest, name = min(theirs)
            # RSS growth is measured in whole KiB pages and can be 0 on both sides: that meets any target.
            ratio = ours / fastest if fastest > 0 else 0.0 if ours <= 0 else float("inf")
            ratios[label] = (ratio, target)
            cells += [name, f"{ratio:.3f}", f"≤ {target:.3f}"]
        rows.append(cells)
    return header, rows, ratios


def verdict(ratios: dict[str, tuple[float, float]]) -> list[str]:
    misses = [f"  - {label}: {r:.3f} > {t:.3f}" for label, (r, t) in ratios.items() if r > t]
    head = f"target (batonflow ≤ {HEADLINE:.3f} × fastest peer on W1, W2, W4; ≤ {TARGET} elsewhere): "
    if not ratios:
        return [head + "nothing to compare (no batonflow or no peer results)"]
    if misses:
        return [head + f"missed on {len(misses)} of {len(ratios)} compared rows", *misses]
    return [head + f"met on all {len(ratios)} compared rows"]


def _absent(report: dict[str, Any], workload: str, target: float | None) -> str:
    if report["status"] != "ok":
        return str(report["status"])
    if WORKLOADS[workload] in report.get("unsupported", ()):
        return "n/a" if target is not None else ""
    return "failed"


def unsupported_notes(reports: dict[str, dict[str, Any]], workloads: list[str]) -> list[str]:
    """Why each "n/a" is there."""
    names = {key: name for name, key in WORKLOADS.items()}
    return [
        f"n/a: {report['name']} {names[key]}: {why}"
        for report in reports.values()
        for key, why in report.get("unsupported", {}).items()
        if names[key] in workloads
    ]


def render_text(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return " | ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(header), "-+-".join("-" * w for w in widths), *map(line, rows)])


def render_markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---", *["---:"] * (len(header) - 1)]) + "|"]
    lines.extend("| " + " | ".join(r) + " |" for r in rows)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: few iterations, 100 concurrent turns")
    parser.add_argument("--only", nargs="+", choices=list(FRAMEWORKS), help="run these framework modules only")
    parser.add_argument(
        "--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS), help="run these workloads only"
    )
    parser.add_argument("--concurrency", type=int, help="concurrent turns in W5 (default 1000, quick 100)")
    parser.add_argument("--no-sections", action="store_true", help="the peer tables only, not batonflow's sections")
    args = parser.parse_args()
    modules = args.only or list(FRAMEWORKS)
    workloads = [w for w in WORKLOADS if w in args.workloads]
    concurrency = args.concurrency or (100 if args.quick else 1000)
    mode = "quick" if args.quick else "full"

    print(f"batonflow benchmarks ({mode}), one framework at a time:", file=sys.stderr)
    load_before = os.getloadavg()[0]
    reports = collect(modules, workloads, quick=args.quick, concurrency=concurrency, rounds=1 if args.quick else 2)
    probes = (
        {module: run_probe(module, label, args.quick) for module, label, _ in PROBES}
        if SUBJECT in modules and not args.no_sections
        else {}
    )
    versions = ", ".join(f"{r['name']} {r.get('version', r['status'])}" for r in reports.values())
    # Other work on the machine inflates every figure, and not evenly: the load average tells how quiet it was, and
    # the CPU-time table (this process's own time) is the steadier one when it was not.
    load = f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    context = f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, {load}; {versions}"
    notes = unsupported_notes(reports, workloads)
    notes += [f"note: {r['name']}: {r['status']} ({r['detail']})" for r in reports.values() if "detail" in r]
    notes += [f"note: {r['name']} W5 failed ({r['w5_detail']})" for r in reports.values() if "w5_detail" in r]
    text, markdown, ratios = [context], [f"# batonflow overhead vs peers ({mode})", "", context], {}
    for clock, title in (("wall", "Wall-clock time (perf_counter)"), ("cpu", "CPU time of the framework's process")):
        header, rows, ratios[clock] = table(reports, workloads, concurrency, clock)
        summary = verdict(ratios[clock])
        text += ["", f"{title}:", render_text(header, rows), *summary]
        markdown += ["", f"## {title}", "", render_markdown(header, rows), "", *summary]
    for module, _, title in PROBES if probes else ():
        lines = section(module, probes[module])
        text += ["", f"{title}:", "", *lines]
        markdown += ["", f"## {title}", "", *lines]
    text += ["", *notes] if notes else []
    markdown += ["", *(f"- {note}" for note in notes)] if notes else []
    print("\n" + "\n".join(text))

    RESULTS.mkdir(exist_ok=True)
    payload = {
        "mode": mode,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load": load,
        "concurrency": concurrency,
        "workloads": workloads,
        "targets": {"W1": HEADLINE, "W2": HEADLINE, "W4": HEADLINE, "other": TARGET},
        "ratios": ratios,
        "frameworks": reports,
        **{module: probes.get(module) for module, _, _ in PROBES},
    }
    (RESULTS / f"{mode}.json").write_text(json.dumps(payload, indent=2) + "\n")
    (RESULTS / f"{mode}.md").write_text("\n".join(markdown) + "\n")
    print(f"\nwritten: {RESULTS / f'{mode}.json'}, {RESULTS / f'{mode}.md'}")


if __name__ == "__main__":
    main()
