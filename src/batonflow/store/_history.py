"""Run histories in a checkpoint store: one record per run, kept after the run ends, bounded by a retention.

A history is opaque bytes (the codec makes them, in ``batonflow.adk``) under a key derived from the run's checkpoint
id, beside the store's checkpoints. An index of the runs kept, with the time each was saved, is what retention
prunes by: it is read, changed and written again on each save, so two runs ending at the same moment in two
processes may each write it without the other's entry. The record then stays in the store but outside the
retention (a leak of one record, never a loss): retention is a bound on growth, not an exact count.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from ..errors import UserError
from ._base import check_checkpoint_id

__all__ = ["HistoryRetention", "KeepsHistory", "history_key", "load_history", "save_history"]

_INDEX = "batonflow-history-index"


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryRetention:
    """How many run histories a store keeps, and for how long: the oldest beyond ``max_runs`` and those saved more
    than ``max_age`` seconds ago are deleted when a run saves its own (None: no bound of that kind)."""

    max_runs: int | None = 1000
    max_age: float | None = None

    def __post_init__(self) -> None:
        if self.max_runs is not None and (type(self.max_runs) is not int or self.max_runs < 1):
            raise UserError(f"HistoryRetention.max_runs: expected an int of 1 or more or None, got {self.max_runs!r}")
        if self.max_age is not None and not (isinstance(self.max_age, int | float) and self.max_age > 0):
            raise UserError(f"HistoryRetention.max_age: expected seconds above 0 or None, got {self.max_age!r}")


def history_key(run_id: str) -> str:
    """Where the history of run ``run_id`` (its checkpoint id) is kept: a fixed-size id whatever the id's size."""
    check_checkpoint_id(run_id)
    return f"batonflow-history:{hashlib.blake2b(run_id.encode('utf-8'), digest_size=16).hexdigest()}"


class KeepsHistory:
    """The store method pair for run histories, on a store's own ``get``/``set``/``delete``: every built-in
    checkpoint store has it."""

    async def save_history(self, run_id: str, data: bytes, *, retention: HistoryRetention) -> None:
        """Keep ``data`` as the history of ``run_id``, replacing the one there, and prune by ``retention``."""
        await _save(self, run_id, data, retention)

    async def load_history(self, run_id: str) -> bytes | None:
        """The history kept for ``run_id``, or None when there is none."""
        data: bytes | None = await self.get(history_key(run_id))  # type: ignore[attr-defined]
        return data


async def save_history(store: Any, run_id: str, data: bytes, retention: HistoryRetention) -> None:
    """``store.save_history``, or the same on the store's ``get``/``set``/``delete`` for a store of your own."""
    method = getattr(store, "save_history", None)
    if method is not None:
        await method(run_id, data, retention=retention)
    else:
        await _save(store, run_id, data, retention)


async def load_history(store: Any, run_id: str) -> bytes | None:
    """``store.load_history``, or the same on the store's ``get`` for a store of your own."""
    method = getattr(store, "load_history", None)
    if method is not None:
        data: bytes | None = await method(run_id)
        return data
    found: bytes | None = await store.get(history_key(run_id))
    return found


async def _save(store: Any, run_id: str, data: bytes, retention: HistoryRetention) -> None:
    """The record first, then the index with it at the newest end, then the records retention drops."""
    key = history_key(run_id)
    await store.set(key, data)
    raw = await store.get(_INDEX)
    try:
        index: dict[str, float] = dict(json.loads(raw)) if raw else {}
    except ValueError:
        index = {}  # a spoilt index loses the bound on older records, never this one
    index.pop(key, None)
    index[key] = time.time()  # wall clock: ages are compared across processes
    ordered = sorted(index.items(), key=lambda item: item[1])
    drop = []
    if retention.max_age is not None:
        cutoff = time.time() - retention.max_age
        drop = [k for k, saved in ordered if saved < cutoff and k != key]
    kept = [(k, saved) for k, saved in ordered if k not in drop]
    if retention.max_runs is not None and len(kept) > retention.max_runs:
        extra = len(kept) - retention.max_runs
        drop += [k for k, _ in kept[:extra]]
        kept = kept[extra:]
    await store.set(_INDEX, json.dumps(kept).encode("utf-8"))
    for old in drop:
        await store.delete(old)
