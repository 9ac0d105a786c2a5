"""Sessions as files in a directory: the layout of Solon's ``FileAgentSession``.

``<name>.messages.ndjson`` holds one message per line, appended when messages are added and rewritten whole when
they are replaced; ``<name>.snapshot.json`` holds the state record. ``<name>`` is the session id encoded so that it
is one file name of the directory and no other id's (``file_name``). Both are JSON, written as the codec's value trees
(``{"$c": "Message", "role": "user", ...}``), so they are readable, diffable, and never executable. Whole-file writes
go to a temporary file that is renamed over the old one, so a crash leaves the old file or the new, never a torn
one; an append is one ``write`` followed by ``fsync``. A line that does not decode is a ``CodecError`` naming the file
and the line.

All I/O runs on one worker thread per store, in call order. Two stores (or two processes) writing the same session
in the same directory are not coordinated: share sessions between processes through SQLite, PostgreSQL or Redis.
Leases are the exception, since they are what keeps two workers from resuming one pending run: ``<name>.lease.json``
names the holder, when it claimed the lease and when the lease ends, and every claim, release, look and break reads
and writes it under an exclusive lock on the directory's ``.leases.lock`` (``flock``; ``msvcrt.locking`` on
Windows), which every process on the machine honours.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from ..codec import DEFAULT_LIMITS, DecodeLimits, decode_json, encode_json
from ..errors import CodecError
from ..schema import Message
from ._base import Lease, StoreBase, check_owner, check_ttl
from ._conn import ThreadWorker
from ._sessions import (
    SessionData,
    SessionState,
    check_last,
    check_messages,
    check_session_id,
    expect_message,
    message_what,
    state_from_value,
    state_to_value,
    state_what,
    tail,
)

__all__ = ["FileSessionStore"]

# The longest suffix is 16 bytes and temporary names add 14: a stem of at most 200 bytes stays within the usual
# 255-byte limit on file names.
_MAX_STEM_BYTES = 200
_TAIL_BLOCK = 16 << 10  # the first block read from the end of a messages file; a window of chat messages fits


class FileSessionStore(StoreBase):
    """A session store in ``directory`` (created on first write): ``<name>.messages.ndjson`` and
    ``<name>.snapshot.json`` per session, where ``<name>`` is the session id encoded as a file name (``file_name``):
    every session id works, and none names a file outside ``directory``. ``limits`` bound what decoding a stored
    value may cost (``DecodeLimits``): each line and the snapshot are decoded with them."""

    def __init__(self, directory: str | os.PathLike[str], *, limits: DecodeLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.directory = Path(directory)
        self._worker = ThreadWorker(
            where=f"file session store at {self.directory}", backend="file", name="batonflow-files"
        )

    def _lease_path(self, session_id: str) -> Path:
        return self.directory / f"{file_name(session_id)}.lease.json"

    def _paths(self, session_id: str) -> tuple[Path, Path]:
        name = file_name(session_id)
        return self.directory / f"{name}.messages.ndjson", self.directory / f"{name}.snapshot.json"

    async def get(self, session_id: str, *, last: int | None = None) -> SessionData | None:
        messages_path, snapshot_path = self._paths(session_id)
        check_last(last)

        limits = self.limits

        def get() -> SessionData | None:
            # Decoded here, on the worker thread: a long history should not hold up the event loop. With ``last``,
            # only the end of the file that holds those lines is read.
            end = _read_tail(messages_path, last)
            raw_state = _read(snapshot_path)
            messages = [] if end is None else _decode_lines(session_id, messages_path, *end, last, limits)
            if not messages and raw_state is None:
                return None
            if raw_state is None:
                return SessionData(messages=messages)
            what = f"{state_what(session_id)} ({snapshot_path})"
            return SessionData(
                messages=messages, state=state_from_value(decode_json(raw_state, what=what, limits=limits), what)
            )

        return await self._worker.run(f"cannot read session {session_id!r}", get)

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        messages_path, _ = self._paths(session_id)
        data = _encode_lines(session_id, messages, self.limits)
        if data:
            await self._worker.run(f"cannot append to session {session_id!r}", lambda: _append(messages_path, data))

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        messages_path, _ = self._paths(session_id)
        data = _encode_lines(session_id, messages, self.limits)

        def replace() -> None:
            if data:
                _write_atomic(messages_path, data)
            else:
                messages_path.unlink(missing_ok=True)

        await self._worker.run(f"cannot replace the messages of session {session_id!r}", replace)

    async def set_state(self, session_id: str, state: SessionState) -> None:
        _, snapshot_path = self._paths(session_id)
        data = _json_line(state_to_value(state), state_what(session_id), self.limits)
        await self._worker.run(
            f"cannot write the state of session {session_id!r}", lambda: _write_atomic(snapshot_path, data)
        )

    async def delete(self, session_id: str) -> None:
        paths = self._paths(session_id)

        def delete() -> None:
            for path in paths:
                path.unlink(missing_ok=True)

        await self._worker.run(f"cannot delete session {session_id!r}", delete)

    async def claim(self, session_id: str, owner: str, ttl: float) -> bool:
        path = self._lease_path(session_id)
        check_owner(owner)
        ttl = check_ttl(ttl)

        def claim() -> bool:
            with _directory_lock(self.directory):
                now = time.time()  # wall-clock time: the processes sharing the directory share the machine's clock
                held = _read_lease(path)
                start = now
                if held is not None and held.expires_at > now:
                    if held.owner != owner:
                        return False
                    start = now if held.claimed_at is None else held.claimed_at  # a renewal keeps the start
                # No fsync: a lease only matters while its holder lives, and a crash ends both.
                path.write_text(json.dumps({"owner": owner, "expires_at": now + ttl, "claimed_at": start}))
                return True

        return await self._worker.run(f"cannot claim session {session_id!r}", claim)

    async def renew(self, session_id: str, owner: str, ttl: float) -> bool:
        """Extend ``owner``'s unexpired lease; False when it lapsed or is another's."""
        path = self._lease_path(session_id)
        check_owner(owner)
        ttl = check_ttl(ttl)

        def renew() -> bool:
            with _directory_lock(self.directory):
                now = time.time()
                held = _read_lease(path)
                if held is None or held.owner != owner or held.expires_at <= now:
                    return False
                path.write_text(json.dumps({"owner": owner, "expires_at": now + ttl, "claimed_at": held.claimed_at}))
                return True

        return await self._worker.run(f"cannot renew session {session_id!r}", renew)

    async def release(self, session_id: str, owner: str) -> None:
        path = self._lease_path(session_id)
        check_owner(owner)

        def release() -> None:
            with _directory_lock(self.directory):
                held = _read_lease(path)
                if held is not None and held.owner == owner:
                    path.unlink()

        await self._worker.run(f"cannot release session {session_id!r}", release)

    async def holder(self, session_id: str) -> Lease | None:
        path = self._lease_path(session_id)

        def holder() -> Lease | None:
            if not path.exists():  # a look creates nothing, not even the directory
                return None
            with _directory_lock(self.directory):  # a claim rewrites the file in place: never read it half-written
                held = _read_lease(path)
            now = time.time()
            if held is None or held.expires_at <= now:
                return None
            held_for = 0.0 if held.claimed_at is None else max(0.0, now - held.claimed_at)
            return Lease(owner=held.owner, held_for=held_for, expires_in=held.expires_at - now)

        return await self._worker.run(f"cannot read the lease of session {session_id!r}", holder)

    async def break_lease(self, session_id: str, owner: str) -> bool:
        path = self._lease_path(session_id)
        check_owner(owner)

        def break_lease() -> bool:
            if not path.exists():
                return False
            with _directory_lock(self.directory):
                held = _read_lease(path)
                if held is None or held.owner != owner:
                    return False
                path.unlink()
                return held.expires_at > time.time()

        return await self._worker.run(f"cannot break the lease of session {session_id!r}", break_lease)

    async def close(self) -> None:
        self._closed = True
        await self._worker.close()


# What a file name cannot hold, the escape itself, and what a terminal would act on when the folder is listed.
_ESCAPED = re.compile(r"[/\\%\x00-\x1f\x7f]")


def file_name(session_id: str) -> str:
    """The stem of the files of ``session_id``: the id itself, but for ``/``, ``\\``, ``%``, control characters and
    a leading ``.``, each written as ``%XX`` (the bytes of its UTF-8); and ``%h`` and the SHA-256 of the id when that
    comes to more than 200 bytes. So the id is data: no id names a path outside the directory (``..``, ``a/b``),
    hides among the temporary files (``.x``), or shares its files with another id (``%`` itself is encoded, and
    ``%h`` cannot come from the encoding, which writes two upper-case hex digits after ``%``). An id none of those
    characters is in keeps the file names it always had."""
    check_session_id(session_id)  # valid UTF-8 without NUL, of at most 256 bytes
    stem = _ESCAPED.sub(_escape, session_id)
    if stem.startswith("."):
        stem = "%2E" + stem[1:]
    if len(stem.encode("utf-8")) > _MAX_STEM_BYTES:
        stem = "%h" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()
    return stem


def _escape(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode("utf-8"))


# -- JSON lines ------------------------------------------------------------------------------------------------------


def _encode_lines(session_id: str, messages: Sequence[Message], limits: DecodeLimits) -> bytes:
    what = message_what(session_id)
    return b"".join(_json_line(m, what, limits) for m in check_messages(messages))


def _json_line(value: Any, what: str, limits: DecodeLimits) -> bytes:
    # The codec's JSON is one line (every line break escaped) and valid UTF-8 (lone surrogates escaped too).
    return encode_json(value, what=what, limits=limits).encode("utf-8") + b"\n"


def _decode_lines(
    session_id: str, path: Path, data: bytes, offset: int, last: int | None, limits: DecodeLimits
) -> list[Message]:
    """The messages of the lines in ``data``, which starts ``offset`` bytes into the file at ``path``."""
    # Split on b"\n" only: str.splitlines would also break inside a message at U+2028 and friends, which JSON
    # leaves unescaped. Blank lines are skipped, as the original does.
    lines = [(number, line) for number, line in enumerate(data.split(b"\n"), 1) if line.strip()]
    what = message_what(session_id)
    out = []
    for number, line in tail(lines, last):
        try:
            out.append(expect_message(decode_json(line, what=what, limits=limits), what))
        except CodecError:
            # Decoded again to say where, counting the lines before the part that was read (only now).
            where = f"{what} ({path}, line {number + _lines_before(path, offset)})"
            out.append(expect_message(decode_json(line, what=where, limits=limits), where))
    return out


def _read_tail(path: Path, last: int | None) -> tuple[bytes, int] | None:
    """The end of the file holding its ``last`` non-blank lines (all of it for None, or when it has fewer), and the
    offset of that end, which starts a line; None when there is no file. Read backwards in blocks, each twice the
    last, so a long conversation costs what its last lines take."""
    if last is None:
        data = _read(path)
        return None if data is None else (data, 0)
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, on every path
    except FileNotFoundError:
        return None
    with f:
        position = f.seek(0, os.SEEK_END)
        data, step = b"", _TAIL_BLOCK
        while position > 0:
            step = min(step, position)
            position -= step
            f.seek(position)
            data = f.read(step) + data
            # Unless it starts the file, the first line read may have begun before: only what follows it counts.
            whole = data if position == 0 else data[data.find(b"\n") + 1 :] if b"\n" in data else b""
            if sum(1 for line in whole.split(b"\n") if line.strip()) >= last:
                return whole, position + len(data) - len(whole)
            step *= 2
        return data, 0


def _lines_before(path: Path, offset: int) -> int:
    """How many lines the file at ``path`` has before ``offset`` (a line's start)."""
    if offset == 0:
        return 0
    with open(path, "rb") as f:
        return f.read(offset).count(b"\n")


# -- leases ----------------------------------------------------------------------------------------------------------

if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """Hold the directory's lease lock, shared with every process and store object that uses the directory.

    The lock file is never deleted: a process waiting on the lock of a deleted file would hold a lock nobody else
    sees. Lease files can be deleted, because they are only touched with the lock held.
    """
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / ".leases.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock(fd)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


class _Held(NamedTuple):
    owner: str
    expires_at: float
    claimed_at: float | None  # None in a file written by the previous release


def _read_lease(path: Path) -> _Held | None:
    """What a lease file says; None when there is none, or when it is unreadable (its writer died mid-write, and a
    dead worker's lease is free)."""
    data = _read(path)
    if data is None:
        return None
    try:
        value = json.loads(data)
        claimed_at = value.get("claimed_at")
        return _Held(str(value["owner"]), float(value["expires_at"]), None if claimed_at is None else float(claimed_at))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


# -- files -----------------------------------------------------------------------------------------------------------


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _append(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        # A crash mid-append can leave a last line without its newline: start on a line of our own, so the damage
        # stays on that one line (which reading reports) instead of swallowing the first new message.
        if f.seek(0, os.SEEK_END) > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                data = b"\n" + data
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temporary, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    if os.name == "posix":  # make the rename itself durable; directories cannot be opened this way on Windows
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
