"""Sessions as files in a directory: the layout of Solon's ``FileAgentSession``.

``<id>.messages.ndjson`` holds one message per line, appended when messages are added and rewritten whole when they
are replaced; ``<id>.snapshot.json`` holds the state record. Both are JSON, written as the codec's value trees
(``{"$c": "Message", "role": "user", ...}``), so they are readable, diffable, and never executable. Whole-file writes
go to a temporary file that is renamed over the old one, so a crash leaves the old file or the new, never a torn
one; an append is one ``write`` followed by ``fsync``. A line that does not decode is a ``CodecError`` naming the file
and the line.

All I/O runs on one worker thread per store, in call order. Two stores (or two processes) writing the same session
in the same directory are not coordinated: share sessions between processes through SQLite, PostgreSQL or Redis.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from ..errors import UserError
from ..schema import Message
from ._base import StoreBase
from ._codec import dump_json, load_json
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

_MAX_ID_BYTES = 200  # the longest suffix is 16 bytes, temporary names add 14: within the usual 255-byte limit


class FileSessionStore(StoreBase):
    """A session store in ``directory`` (created on first write): ``<id>.messages.ndjson`` and
    ``<id>.snapshot.json`` per session, so a session id must be usable as a file name."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._worker = ThreadWorker(
            where=f"file session store at {self.directory}", backend="file", name="batonflow-files"
        )

    def _paths(self, session_id: str) -> tuple[Path, Path]:
        check_file_id(session_id)
        return (
            self.directory / f"{session_id}.messages.ndjson",
            self.directory / f"{session_id}.snapshot.json",
        )

    async def get(self, session_id: str, *, last: int | None = None) -> SessionData | None:
        messages_path, snapshot_path = self._paths(session_id)
        check_last(last)

        def get() -> SessionData | None:
            # Decoded here, on the worker thread: a long history should not hold up the event loop.
            raw_messages = _read(messages_path)
            raw_state = _read(snapshot_path)
            messages = [] if raw_messages is None else _decode_lines(session_id, messages_path, raw_messages, last)
            if not messages and raw_state is None:
                return None
            if raw_state is None:
                return SessionData(messages=messages)
            what = f"{state_what(session_id)} ({snapshot_path})"
            return SessionData(messages=messages, state=state_from_value(load_json(raw_state, what), what))

        return await self._worker.run(f"cannot read session {session_id!r}", get)

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        messages_path, _ = self._paths(session_id)
        data = _encode_lines(session_id, messages)
        if data:
            await self._worker.run(f"cannot append to session {session_id!r}", lambda: _append(messages_path, data))

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        messages_path, _ = self._paths(session_id)
        data = _encode_lines(session_id, messages)

        def replace() -> None:
            if data:
                _write_atomic(messages_path, data)
            else:
                messages_path.unlink(missing_ok=True)

        await self._worker.run(f"cannot replace the messages of session {session_id!r}", replace)

    async def set_state(self, session_id: str, state: SessionState) -> None:
        _, snapshot_path = self._paths(session_id)
        data = dump_json(state_to_value(state), state_what(session_id)) + b"\n"
        await self._worker.run(
            f"cannot write the state of session {session_id!r}", lambda: _write_atomic(snapshot_path, data)
        )

    async def delete(self, session_id: str) -> None:
        paths = self._paths(session_id)

        def delete() -> None:
            for path in paths:
                path.unlink(missing_ok=True)

        await self._worker.run(f"cannot delete session {session_id!r}", delete)

    async def close(self) -> None:
        self._closed = True
        await self._worker.close()


def check_file_id(session_id: str) -> str:
    # The id becomes a file name, and it is untrusted input: nothing that could leave the directory or hide among
    # temporary files.
    check_session_id(session_id)
    try:
        size = len(session_id.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: no file system takes it
        size = None
    if size is None or size > _MAX_ID_BYTES or session_id.startswith(".") or any(c in session_id for c in "/\\\x00"):
        raise UserError(
            f"a file session store names its files after the session id, so the id must be valid UTF-8 of at most "
            f"{_MAX_ID_BYTES} bytes that neither starts with '.' nor contains '/', '\\' or NUL; got {session_id!r}"
        )
    return session_id


# -- JSON lines ------------------------------------------------------------------------------------------------------


def _encode_lines(session_id: str, messages: Sequence[Message]) -> bytes:
    what = message_what(session_id)
    return b"".join(dump_json(m, what) + b"\n" for m in check_messages(messages))


def _decode_lines(session_id: str, path: Path, data: bytes, last: int | None) -> list[Message]:
    # Split on b"\n" only: str.splitlines would also break inside a message at U+2028 and friends, which JSON
    # leaves unescaped. Blank lines are skipped, as the original does.
    lines = [(number, line) for number, line in enumerate(data.split(b"\n"), 1) if line.strip()]
    what = message_what(session_id)
    out = []
    for number, line in tail(lines, last):
        where = f"{what} ({path}, line {number})"
        out.append(expect_message(load_json(line, where), where))
    return out


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
