"""Holding a store's lease while a run works under it: claimed first, renewed as it goes, given back at the end.

A resume claims its checkpoint's lease before it reads the checkpoint (a conversation, its session's), so of two
resumers exactly one goes ahead. The lease has a ttl so that a runner that dies blocks nobody for long; a runner
that lives renews it every third of the ttl, so that a segment longer than the ttl keeps it. A renewal that finds
the lease taken or lapsed, or that cannot reach the store before the lease would have lapsed, marks it lost: the run
then stops before its next tool batch (``check``), and writes nothing more under the id (``LeaseLostError``).

Each claim is made under a fresh owner token (``uuid4``), the lease's *generation*: a store's ``renew`` extends only
an unexpired lease of that very token, so a holder that was paused past its ttl (SIGSTOP, a VM migration) never
takes its lapsed lease back, even when nobody else claimed it meanwhile; only a new claim can, as a new generation,
and the old holder's fenced writes then fail. A store without ``renew`` (one of one's own) is renewed by ``claim``,
which may re-take a lapsed lease: the holder's own clock (no renewal for 0.9 of the ttl) is then its only fence.

A process may install a fence of its own around the runs it starts (``fenced_by``): a durable worker's proof that
it is still alive (its own heartbeat lease). The runs started inside check it before each tool batch, beside their
lease, so a run stops before its next tool once its process cannot prove it still owns its work. Writes to the
store stay fenced by the lease alone: a lease still held proves nobody else holds the checkpoint, so what finished
is saved even while the process's own proof is out of date.

Giving the lease back is best effort: a release that fails is logged, never raised over what the run did (the
lease lapses by itself after its ttl).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol

from ..errors import LeaseLostError, ResumeConflictError, UserError

__all__ = ["Fenced", "LeaseHolder", "Leasing", "break_lease", "conflict", "fenced_by", "installed_fence", "tool_fence"]

_log = logging.getLogger("batonflow.adk")


class Leasing(Protocol):
    """What a store needs for leases: checkpoint stores and session stores both have it."""

    async def claim(self, key: str, owner: str, ttl: float, /) -> bool: ...

    async def release(self, key: str, owner: str, /) -> None: ...


_FENCE: ContextVar[Callable[[], None] | None] = ContextVar("batonflow_fence", default=None)


@contextlib.contextmanager
def fenced_by(check: Callable[[], None]) -> Iterator[None]:
    """Every lease check of the runs started inside also calls ``check``, which raises (``LeaseLostError``) once the
    process may no longer run their work (a worker whose own heartbeat lease lapsed)."""
    token = _FENCE.set(check)
    try:
        yield
    finally:
        _FENCE.reset(token)


installed_fence = _FENCE.get
"""The fence ``fenced_by`` installed around the code running now, if any."""


class LeaseHolder:
    """The lease on ``key`` in ``store``, held for one run segment by ``owner``. ``what`` names it in messages
    (``checkpoint[x]``, ``session 'y'``)."""

    __slots__ = (
        "_holding",
        "_released",
        "_renewal",
        "_renewed_at",
        "_timer",
        "breaker",
        "key",
        "lost",
        "owner",
        "store",
        "ttl",
        "what",
    )

    def __init__(
        self, store: Leasing, key: str, owner: str, ttl: float, what: str, breaker: str = "Runner.break_lease"
    ) -> None:
        self.store = store
        self.breaker = breaker
        self.key = key
        self.owner = owner
        self.ttl = ttl
        self.what = what
        self.lost = False
        # Renewing is a timer, and a task only while a renewal talks to the store (every third of the ttl): a run
        # that holds a lease costs no task of its own while it works.
        self._holding = False
        self._released = False
        self._timer: asyncio.TimerHandle | None = None
        self._renewal: asyncio.Task[None] | None = None
        self._renewed_at = 0.0

    async def claim(self, doing: str) -> None:
        """Take the lease, or raise ``ResumeConflictError`` saying who holds it; then keep renewing it."""
        if not await self.store.claim(self.key, self.owner, self.ttl):
            raise await conflict(self.store, self.key, self.what, doing, self.breaker)
        self._renewed_at = time.monotonic()
        self._holding = True
        self._schedule()

    def check(self) -> None:
        """Raises ``LeaseLostError`` once the lease is known lost."""
        if not self.lost and self._holding and time.monotonic() - self._renewed_at >= self.ttl * 0.9:
            self.lost = True  # not renewed for most of its ttl (the store is unreachable): it may lapse any moment
        if self.lost:
            raise LeaseLostError(
                f"{self.what}: this runner lost its lease (it could not renew it within its {self.ttl:g} s ttl, or "
                "another runner took it): it stops before it runs another tool, and writes nothing more under it",
                checkpoint_id=self.key,
                owner=self.owner,
            )

    async def release(self) -> None:
        """Stop renewing and give the lease back; never raises (a lease that stays lapses after its ttl). Once only:
        a second call (the run's ``finally`` after the save gave it back) does nothing."""
        if self._released:
            return
        self._released = True
        self._holding = False
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        renewal, self._renewal = self._renewal, None
        if renewal is not None:
            renewal.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewal
        if self.lost:
            return  # not ours any more: releasing could only fail or free nothing
        try:
            await self.store.release(self.key, self.owner)
        except Exception:
            _log.warning("could not release the lease on %s; it lapses in %g s", self.what, self.ttl, exc_info=True)

    def _schedule(self) -> None:
        """The next renewal, a third of the ttl from now."""
        if self._holding and not self.lost:
            self._timer = asyncio.get_running_loop().call_later(self.ttl / 3, self._due)

    def _due(self) -> None:
        self._timer = None
        if self._holding:
            self._renewal = asyncio.get_running_loop().create_task(self._renew(), name=f"lease {self.what}")

    async def _renew(self) -> None:
        try:
            renew = getattr(self.store, "renew", None) or self.store.claim  # strict where the store can (see the doc)
            held = await renew(self.key, self.owner, self.ttl)
        except Exception:
            _log.warning("could not renew the lease on %s", self.what, exc_info=True)
            if time.monotonic() - self._renewed_at >= self.ttl:
                self.lost = True  # it has lapsed by now: another runner may hold it
                return
            held = None  # tried again a third of the ttl later
        if held is False:
            self.lost = True
            return
        if held:
            self._renewed_at = time.monotonic()
        self._renewal = None
        self._schedule()


async def break_lease(store: Any, key: str, holder: str, what: str) -> bool:
    """Break ``holder``'s lease on ``key`` in ``store`` (see ``Runner.break_lease``)."""
    if store is None:
        raise UserError(f"cannot break the lease on {what}: expected a store, got none")
    breaker = getattr(store, "break_lease", None)
    if breaker is None:
        raise UserError(
            f"cannot break the lease on {what}: expected a store with break_lease(), got {type(store).__qualname__}"
        )
    return bool(await breaker(key, holder))


async def conflict(
    store: Any, key: str, what: str, doing: str, breaker: str = "Runner.break_lease"
) -> ResumeConflictError:
    """The error for a lease another runner holds, naming the holder and its age when the store can tell."""
    lease = None
    holder = getattr(store, "holder", None)
    if holder is not None:
        try:
            lease = await holder(key)
        except Exception:
            _log.debug("could not read the holder of %s", what, exc_info=True)
    if lease is None:
        return ResumeConflictError(f"{what} is being {doing} by another runner")
    return ResumeConflictError(
        f"{what} is being {doing} by another runner: its lease is held by {lease.owner!r} for "
        f"{lease.held_for:.1f} s and lapses in {lease.expires_in:.1f} s unless renewed; if that runner is gone, "
        f"break it with {breaker}({key!r}, {lease.owner!r})",
        lease=lease,
    )


def tool_fence(lease: LeaseHolder | None) -> Callable[[], None] | None:
    """What a run checks before each tool batch: its lease (when it has one), then the process's fence."""
    process = installed_fence()
    if lease is None:
        return process
    if process is None:
        return lease.check

    def check() -> None:
        lease.check()
        process()

    return check


class Fenced:
    """A checkpoint store's ``set`` and ``delete`` under a lease: with the owner when the store checks it (the
    write and the check are then one atomic operation in the store), else plainly, the runner's own ``check``
    before it being the fence."""

    __slots__ = ("_owned", "_store")

    def __init__(self, store: Any) -> None:
        self._store = store
        self._owned = _takes_owner(type(store))

    async def set(self, key: str, data: bytes, *, owner: str) -> None:
        if self._owned:
            await self._store.set(key, data, owner=owner)
        else:
            await self._store.set(key, data)

    async def delete(self, key: str, *, owner: str) -> None:
        if self._owned:
            await self._store.delete(key, owner=owner)
        else:
            await self._store.delete(key)


def _takes_owner(kind: type) -> bool:
    """Whether a store class's ``set`` and ``delete`` take ``owner=`` (a store of one's own may not)."""
    owned = _OWNED.get(kind)
    if owned is None:
        try:
            owned = all("owner" in inspect.signature(getattr(kind, name)).parameters for name in ("set", "delete"))
        except (AttributeError, TypeError, ValueError):
            owned = False
        _OWNED[kind] = owned
    return owned


_OWNED: dict[type, bool] = {}
