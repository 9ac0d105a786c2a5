"""Hostile checkpoints against the codec: ``python -m benchmarks.codec_hostile [--cases N] [--seed S]``.

Two probes, each in a child process capped at 2 GiB of address space, so that a
bomb that would take the machine down ends in ``MemoryError`` instead:

* **bombs**: payloads of about 16 KB and 65 KB whose zlib body inflates to a list of minimal ``Message`` objects;
  we report the decoded size (peak RSS growth of the child), the time, and how decoding ended.
* **fuzz**: the stored checkpoints of release 0.1.0 (tests/store/fixtures) with one field of one registered object
  replaced by a value of another type, re-sealed with a valid checksum. Each case ends as a well-typed decode, a
  ``CodecError``, a decode whose objects do not fit their field annotations (what breaks later with
  ``TypeError``/``AttributeError``), or another exception.

It ends with what the checks cost: the time to decode the checkpoints of benchmarks/checkpoints.py (a
conversation of 200 and of 2,000 messages stopped at an approval), the minimum of many runs.
"""

from __future__ import annotations

import argparse
import collections.abc
import dataclasses
import importlib.util
import json
import random
import resource
import struct
import subprocess
import sys
import time
import types
import typing
import zlib
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "store" / "fixtures" / "release-0.1.0"
HOSTILE = [7, -1, 0, 1.5, "x", "", True, False, None, [], [7], ["x"], {}, {"a": 7}, {"$c": "Usage"}]
HOSTILE += [{"$t": "tuple", "v": [7]}, {"$t": "bytes", "v": "AA=="}, {"$c": "RunStep", "agent_name": "a"}]
_ADDRESS_SPACE = 2 << 30


def seal(body: bytes, flags: int = 0) -> bytes:
    """A payload around ``body`` with a valid checksum, as the codec's envelope lays it out."""
    return struct.pack(">3sBBI", b"BFC", 1, flags, zlib.crc32(body, zlib.crc32(bytes((flags,))))) + body


def bomb(compressed_size: int) -> bytes:
    """A payload of about ``compressed_size`` bytes: a list of minimal messages, inflated by zlib and by defaults."""
    item = b'{"$c":"Message","role":"user"},'
    count = compressed_size * 1000 // len(item)  # zlib at level 9 packs this at about 1,000 to 1
    while True:
        body = b"[" + item * count + b'{"$c":"Message","role":"user"}]'
        packed = zlib.compress(body, 9)
        if abs(len(packed) - compressed_size) <= compressed_size * 0.05:
            return seal(packed, 1)
        count = int(count * compressed_size / len(packed))


# -- the oracle: does a decoded value fit the field annotations? ---------------------------------------------------


def fits(value: Any, hint: Any) -> bool:
    if hint is Any or isinstance(hint, typing.TypeVar):
        return well_typed(value)  # interrupt states, session values: registered objects inside are checked too
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if origin is typing.Union or origin is types.UnionType:
        return any(fits(value, a) for a in args)
    if origin in (list, set, frozenset):
        return type(value) is origin and all(fits(v, args[0]) for v in value) if args else type(value) is origin
    if origin is tuple:
        if type(value) is not tuple:
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(fits(v, args[0]) for v in value)
        return len(args) == len(value) and all(fits(v, a) for v, a in zip(value, args, strict=True))
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, origin) and all(fits(k, args[0]) and fits(v, args[1]) for k, v in value.items())
    if hint is float:  # PEP 484: an int (and so a bool) will do
        return type(value) in (int, float, bool)
    if isinstance(hint, type):
        return isinstance(value, hint) and well_typed(value)
    return True


def well_typed(value: Any) -> bool:
    """Whether every registered dataclass inside ``value`` holds values of its fields' annotated types."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = typing.get_type_hints(type(value))
        return all(
            fits(getattr(value, f.name), hints[f.name])
            for f in dataclasses.fields(value)
            if f.init and not f.name.startswith("_")
        )
    if isinstance(value, list | tuple | set | frozenset):
        return all(well_typed(v) for v in value)
    if isinstance(value, dict):
        return all(well_typed(v) for v in value.values())
    return True


# -- the fuzz cases ------------------------------------------------------------------------------------------------


def body_of(data: bytes) -> Any:
    body = data[9:]
    return json.loads(zlib.decompress(body) if data[4] & 1 else body)


def objects(tree: Any) -> list[dict[str, Any]]:
    """Every registered object (``{"$c": …}``) in a JSON tree."""
    found = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "$c" in node:
                found.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def mutants(cases: int, seed: int) -> list[bytes]:
    """``cases`` checkpoints, each with one field of one object set to a hostile value."""
    rng = random.Random(seed)
    trees = [body_of(p.read_bytes()) for p in sorted(FIXTURES.glob("*.checkpoint"))]
    out = []
    while len(out) < cases:
        tree = json.loads(json.dumps(rng.choice(trees)))
        candidates = [o for o in objects(tree) if len(o) > 1 and "v" not in o]
        target = rng.choice(candidates)
        key = rng.choice([k for k in target if k != "$c"])
        target[key] = json.loads(json.dumps(rng.choice(HOSTILE)))
        body = json.dumps(tree, separators=(",", ":")).encode()
        out.append(seal(zlib.compress(body), 1))
    return out


def classify(data: bytes) -> str:
    from batonflow.codec import decode
    from batonflow.errors import CodecError

    try:
        value = decode(data)
    except CodecError:
        return "CodecError"
    except Exception as exc:
        return f"other: {type(exc).__name__}"
    return "decoded, well-typed" if well_typed(value) else "decoded, ill-typed"


# -- child processes -----------------------------------------------------------------------------------------------


def _rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(kind: str, arg: int, seed: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_ADDRESS_SPACE, _ADDRESS_SPACE))
    import batonflow.agents  # noqa: F401 - registers every checkpointed type
    from batonflow.errors import CodecError

    _load_fixture_types()
    from batonflow.codec import decode

    if kind == "bomb":
        data = bomb(arg)
        before = _rss_kib()
        started = time.perf_counter()
        try:
            value = decode(data)
            outcome = f"decoded {len(value):,} messages"
        except CodecError as exc:
            outcome = f"CodecError: {exc}"
        except MemoryError:
            outcome = "MemoryError"
        seconds = time.perf_counter() - started
        grown = (_rss_kib() - before) / 1024
        print(json.dumps({"bytes": len(data), "seconds": seconds, "rss_mb": grown, "outcome": outcome}))
    else:
        counts = collections.Counter(classify(m) for m in mutants(arg, seed))
        print(json.dumps(dict(counts)))


def _load_fixture_types() -> None:
    """Register the user types the stored checkpoints hold (``fixtures.Customer``, …), as the fixtures' tests do."""
    spec = importlib.util.spec_from_file_location("batonflow_checkpoint_fixtures", FIXTURES.parent / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)


def decode_cost() -> None:
    import asyncio
    import statistics

    from batonflow.codec import decode
    from batonflow.store import MemoryCheckpointStore

    from .checkpoints import conversation, interrupt

    print("\ndecode time of benchmarks/checkpoints.py's checkpoints (ms; min and median)")
    print("| messages | bytes | min | median |")
    print("|---|---|---|---|")
    for n, rounds in ((200, 300), (2000, 60)):
        store = MemoryCheckpointStore()
        asyncio.run(interrupt(store, conversation(n), "c"))
        data = asyncio.run(store.get("c"))
        assert data is not None
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            decode(data)
            times.append((time.perf_counter() - started) * 1000)
        print(f"| {n:,} | {len(data):,} | {min(times):.2f} | {statistics.median(times):.2f} |")


def run_child(*args: str) -> Any:
    done = subprocess.run([sys.executable, "-m", "benchmarks.codec_hostile", "--child", *args], capture_output=True)
    if done.returncode != 0:
        return {"outcome": f"child exited {done.returncode}: {done.stderr.decode()[-300:]}"}
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.seed)
        return
    print("decompression bombs (a child process capped at 2 GiB of address space)")
    print("| payload | decode time | peak RSS growth | outcome |")
    print("|---|---|---|---|")
    for size in (16_000, 65_000):
        r = run_child("bomb", str(size))
        if "bytes" in r:
            print(f"| {r['bytes']:,} B | {r['seconds']:.3f} s | {r['rss_mb']:,.0f} MB | {r['outcome'][:150]} |")
        else:
            print(f"| ~{size:,} B | | | {r['outcome']} |")
    print(f"\nfuzzed checkpoints: one field of one object replaced by a value of another type (seed {args.seed})")
    counts = run_child("fuzz", str(args.cases))
    print(f"| cases | {sum(counts.values()) if 'outcome' not in counts else 0:,} |")
    print("|---|---|")
    for outcome, n in sorted(counts.items()):
        print(f"| {outcome} | {n:,} |")
    decode_cost()


if __name__ == "__main__":
    main()
