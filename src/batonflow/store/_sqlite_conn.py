"""An SQLite database for a store: a writer thread that commits in groups, a reader thread beside it.

sqlite3 connections must not be shared between threads, so each thread owns one. Committing is what costs: with
``synchronous=FULL`` every commit waits for the disk, so one transaction per write put a few hundred resumes a second
through a store however many were waiting. The writer therefore takes every write queued while it was busy and runs
them in one transaction, each inside a savepoint of its own, and one wait for the disk covers them all. Each write
keeps its own result and its own error: a write that fails is rolled back to its savepoint and fails only its caller,
and no caller hears of success before the COMMIT. Since the writer holds SQLite's write lock from BEGIN IMMEDIATE to
COMMIT, another process still never sees, or interleaves with, half of a write, and a claim is still decided on the
latest row. Reads go to the reader's connection: WAL lets it read while the writer writes, it never waits for a
commit, and it sees only what was committed.

A write may say it need not wait for the disk (``durable=False``: a lease taken or given back, which no one on the
machine can hold past a power cut anyway). A group of such writes alone commits with ``synchronous=NORMAL``: it is
in the log, safe from a killed process, and on the disk with the next durable commit, which writes the log out up
to its own end. A group with one durable write in it commits as the store's ``synchronous`` says.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import queue
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from ..errors import StoreError, UserError
from ._base import closed_error

__all__ = ["Schema", "SqliteConnection", "Synchronous", "check_synchronous", "transaction"]

R = TypeVar("R")

Schema = str | Callable[[sqlite3.Connection], None]
"""One step of an SQLite schema: a statement, or a function of the connection (a migration)."""

Synchronous = Literal["FULL", "NORMAL"]
"""How an SQLite store waits for the disk (its ``synchronous`` option).

``"FULL"``, the default, waits at every commit until the write-ahead log is on the disk: what a store reported saved
survives a power cut or an operating system crash, not only a killed process. ``"NORMAL"`` lets the operating system
write the log when it will and waits only when the log is copied into the database: a killed process still loses
nothing and the file is never damaged, but a power cut or a crash of the machine can undo the last commits before
it, so a checkpoint reported saved may be gone (the run's tools then run again when it is resumed from the one
before, or the interrupt is not there to resume). It is the faster choice where each commit has to wait for a slow
disk alone; with commits in groups, a busy store gains less.
"""

MAX_GROUP = 256
"""The most writes one transaction takes: enough to spread a commit's wait for the disk thin, few enough that the
first of them is not kept waiting for long."""


class _Call:
    """One call of a store on a lane: what to run, and where its outcome goes."""

    __slots__ = ("durable", "error", "fn", "future", "loop", "operation", "read", "value")

    def __init__(
        self, operation: str, fn: Callable[[sqlite3.Connection], Any], *, read: bool, durable: bool = True
    ) -> None:
        self.operation = operation
        self.fn = fn
        self.read = read
        self.durable = durable
        self.loop = asyncio.get_running_loop()
        self.future: asyncio.Future[Any] = self.loop.create_future()
        self.value: Any = None
        self.error: BaseException | None = None


class _Stop:
    """Put on a lane's queue last: the thread closes its connection, ends, and says so through ``done``."""

    __slots__ = ("done",)

    def __init__(self, done: asyncio.Future[None] | None) -> None:
        self.done = done


class _Lane:
    """A thread with a connection of its own, running the calls put on its queue in order, in groups.

    The thread holds the queue and the connection, not the lane: a store dropped without being closed stops its
    thread and closes its connection when the lane is collected.
    """

    def __init__(
        self, name: str, opener: Callable[[], sqlite3.Connection], *, grouped: bool, synchronous: Synchronous
    ) -> None:
        self._queue: queue.SimpleQueue[_Call | _Stop] = queue.SimpleQueue()
        args = (self._queue, opener, grouped, synchronous)
        self._thread = threading.Thread(target=_serve, args=args, name=name, daemon=True)
        self._started = False

    def put(self, call: _Call) -> None:
        if not self._started:
            self._started = True
            self._thread.start()
            weakref.finalize(self, self._queue.put, _Stop(None))
        self._queue.put(call)

    async def stop(self) -> None:
        """Run the calls already queued, then close the connection and end the thread."""
        if not self._started:
            return
        done = asyncio.get_running_loop().create_future()
        self._queue.put(_Stop(done))
        await done


def _serve(
    calls_queue: queue.SimpleQueue[_Call | _Stop],
    opener: Callable[[], sqlite3.Connection],
    grouped: bool,
    synchronous: Synchronous,
) -> None:
    conn: sqlite3.Connection | None = None
    waits = _Waits(synchronous)
    while True:
        calls, stop = _take(calls_queue)
        if calls:
            try:
                if conn is None:
                    conn = opener()
            except BaseException as exc:  # each caller hears why the database could not be opened
                for call in calls:
                    call.error = exc
            else:
                _run(conn, calls, grouped, waits)
            _settle(calls)
        del calls  # a call holds its store, through its function: nothing here may keep a dropped store alive
        if stop is not None:
            break
    if conn is not None:
        conn.close()
    if stop.done is not None:
        with contextlib.suppress(RuntimeError):
            stop.done.get_loop().call_soon_threadsafe(_resolve, stop.done)


def _take(calls_queue: queue.SimpleQueue[_Call | _Stop]) -> tuple[list[_Call], _Stop | None]:
    """The calls waiting on the queue (at least one, at most ``MAX_GROUP``), and the stop, if it came among them."""
    first = calls_queue.get()
    if isinstance(first, _Stop):
        return [], first
    calls = [first]
    while len(calls) < MAX_GROUP:
        try:
            item = calls_queue.get_nowait()
        except queue.Empty:
            break
        if isinstance(item, _Stop):
            return calls, item
        calls.append(item)
    return calls, None


class _Waits:
    """What the connection's commits wait for now: the store's ``synchronous``, or NORMAL for a group of writes that
    are all ``durable=False`` (set only when it changes, and never inside a transaction)."""

    __slots__ = ("current", "store")

    def __init__(self, store: Synchronous) -> None:
        self.store: Synchronous = store
        self.current: Synchronous = store

    def set_for(self, conn: sqlite3.Connection, writes: Sequence[_Call]) -> None:
        wanted: Synchronous = self.store if any(call.durable for call in writes) else "NORMAL"
        if wanted != self.current and not conn.in_transaction:
            conn.execute(f"PRAGMA synchronous={wanted}")  # one of two words, never user text
            self.current = wanted


def _run(conn: sqlite3.Connection, calls: list[_Call], grouped: bool, waits: _Waits) -> None:
    writes: list[_Call] = []
    for call in calls:
        if call.read or not grouped:
            _commit(conn, writes, waits)  # the writes before a read, so that it sees them committed or not at all
            writes = []
            if not call.read:
                waits.set_for(conn, [call])
            _run_one(conn, call)
        else:
            writes.append(call)
    _commit(conn, writes, waits)


def _run_one(conn: sqlite3.Connection, call: _Call) -> None:
    try:
        call.value = call.fn(conn)
    except BaseException as exc:
        call.error = exc


def _commit(conn: sqlite3.Connection, writes: list[_Call], waits: _Waits) -> None:
    """Run ``writes`` in one transaction, each in its own savepoint; a single write runs as it is."""
    if writes:
        waits.set_for(conn, writes)
    while len(writes) > 1:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except BaseException as exc:
            for call in writes:
                call.error = exc
            return
        done, writes = _in_savepoints(conn, writes)
        if not conn.in_transaction:  # SQLite rolled the transaction back by itself: none of ``done`` is saved
            continue
        try:
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for call in done:
                if call.error is None:
                    call.error, call.value = exc, None
    if writes:
        _run_one(conn, writes[0])


def _in_savepoints(conn: sqlite3.Connection, writes: list[_Call]) -> tuple[list[_Call], list[_Call]]:
    """Run each write in a savepoint of the open transaction: (the writes run, the writes left to run).

    Writes are left over only when a failure ended the whole transaction (SQLite does that on a full disk or an I/O
    error): then the ones already run were rolled back with it and fail with that error, and the rest go on in a new
    transaction.
    """
    for index, call in enumerate(writes):
        conn.execute("SAVEPOINT batonflow_call")
        _run_one(conn, call)
        if call.error is None:
            conn.execute("RELEASE batonflow_call")
        elif conn.in_transaction:
            conn.execute("ROLLBACK TO batonflow_call")
            conn.execute("RELEASE batonflow_call")
        else:
            for earlier in writes[:index]:
                if earlier.error is None:
                    earlier.error, earlier.value = call.error, None
            return writes[: index + 1], writes[index + 1 :]
    return writes, []


def _settle(calls: list[_Call]) -> None:
    """Hand each call's outcome to its event loop: one wake-up per loop for the whole group."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Call]] = {}
    for call in calls:
        by_loop.setdefault(call.loop, []).append(call)
    for loop, group in by_loop.items():
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody is waiting any more
            loop.call_soon_threadsafe(_deliver, group)


def _deliver(calls: list[_Call]) -> None:
    for call in calls:
        if call.future.done():  # the caller was cancelled
            continue
        if call.error is not None:
            call.future.set_exception(call.error)
        else:
            call.future.set_result(call.value)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class SqliteConnection:
    """The database at ``path`` for one store: writes committed in groups by a writer thread, reads run by a reader
    thread (see the module). An in-memory database exists only on its own connection, so there its reads wait
    their turn among the writes.

    WAL, ``synchronous`` FULL or NORMAL (see ``Synchronous``); ``schema`` runs once on each connection, when it opens: SQL
    statements, and functions of the connection for what one statement cannot say (a column added only to a table
    that lacks it). A call that needs several statements to be atomic wraps them in
    ``transaction``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float,
        schema: Sequence[Schema],
        where: str,
        synchronous: Synchronous = "FULL",
    ) -> None:
        self.path: str | Path = path if path == ":memory:" else Path(path)
        self.where = where
        self._closed = False
        synchronous = check_synchronous(synchronous)
        opener = functools.partial(_open_database, self.path, timeout, tuple(schema), synchronous)

        self._writer = _Lane("batonflow-sqlite-writer", opener, grouped=True, synchronous=synchronous)
        self._reader = (
            self._writer
            if self.path == ":memory:"
            else _Lane("batonflow-sqlite-reader", opener, grouped=False, synchronous=synchronous)
        )

    async def run(
        self, operation: str, fn: Callable[[sqlite3.Connection], R], *, read: bool = False, durable: bool = True
    ) -> R:
        """``fn`` on the reader's connection (``read``: it must not write) or in the writer's next group; a write
        with ``durable=False`` need not wait for the disk (see the module)."""
        if self._closed:
            raise closed_error(self.where, "sqlite")
        call = _Call(operation, fn, read=read, durable=durable)
        (self._reader if read else self._writer).put(call)
        try:
            return cast("R", await call.future)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self.where}: {operation}: {exc}", backend="sqlite") from exc

    async def close(self) -> None:
        """Stop taking calls; those already queued run first."""
        if self._closed:
            return
        self._closed = True
        await self._writer.stop()
        if self._reader is not self._writer:
            await self._reader.stop()


def _open_database(
    path: str | Path, timeout: float, schema: Sequence[Schema], synchronous: Synchronous
) -> sqlite3.Connection:
    """A connection to the database at ``path`` (its folder made if needed), in WAL mode, with ``schema``'s steps run
    in one write transaction (so that two processes opening an old file migrate it once).

    The connection is in autocommit mode (``isolation_level=None``): nothing is left open but what a caller
    begins. ``synchronous=FULL`` (the default) makes what a store reported saved survive a power cut, not only a
    killed process; with commits in groups it costs one wait for the disk per group, not per write. A write waits
    up to ``timeout`` seconds for other connections.
    """
    if isinstance(path, Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        _check_not_damaged(path)
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        _enable_wal(conn, timeout)
        conn.execute(f"PRAGMA synchronous={synchronous}")  # one of two words, checked: never user text
        conn.execute("BEGIN IMMEDIATE")
        for step in schema:
            if isinstance(step, str):
                conn.execute(step)
            else:
                step(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.close()  # rolls back what the schema had begun
        raise
    return conn


_WAL_MAGIC = (0x377F0682, 0x377F0683)  # the first four bytes of a write-ahead log, by the byte order of its checksums


def _check_not_damaged(path: Path) -> None:
    """Refuse, before SQLite touches them, a database and log that SQLite would take for a database with less in it.

    SQLite reads an empty file as a new database, and a write-ahead log whose header is not one as no log at all;
    what the log held is then gone without a word, and a checkpoint saved there reads as not found. Neither comes
    about on its own: the log is made only once the database file has its header, and it never loses its own (a log
    cut short at its end, by a crash while it was written, SQLite reads up to its last whole commit, as it should).
    So either means the files were damaged, and they are left as they are, for whoever restores them.
    """
    log = path.with_name(path.name + "-wal")
    try:
        # The log first: once it holds data the database file had its header before, even if another process is
        # making both right now.
        log_size = log.stat().st_size
        size = path.stat().st_size
    except FileNotFoundError:
        return  # no database yet, or no log: nothing SQLite could misread
    if not log_size:
        return
    if not size:
        raise sqlite3.DatabaseError(
            f"the database file is damaged: expected {path} to hold the database its write-ahead log {log} adds to "
            f"({log_size:,} bytes), got an empty file (restore both from a backup, or move them away to start afresh)"
        )
    with log.open("rb") as file:
        header = file.read(32)
    if len(header) == 32 and int.from_bytes(header[:4], "big") not in _WAL_MAGIC:
        raise sqlite3.DatabaseError(
            f"the database file is damaged: expected its write-ahead log {log} to begin with a log's header, got "
            f"{header[:8].hex(' ')} (restore both from a backup, or move the log away to lose what it held)"
        )


def check_synchronous(synchronous: object) -> Synchronous:
    """``synchronous`` if it is ``"FULL"`` or ``"NORMAL"``; a ``UserError`` saying so otherwise."""
    if synchronous == "FULL" or synchronous == "NORMAL":
        return synchronous
    raise UserError(f"synchronous: expected 'FULL' (the default) or 'NORMAL', got {synchronous!r}")


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch ``conn``'s database to WAL, waiting up to ``timeout`` seconds for other connections.

    SQLite answers "database is locked" at once, without its busy handler, when another process is switching the
    same new database's journal mode at the same moment: retried here, so that processes opening a fresh file
    together all get in.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection, *, write: bool = True) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` (take the write lock now, so the statements inside cannot deadlock upgrading it) or a
    plain ``BEGIN`` for a consistent read; commit on success, roll back on any exception.

    Inside a group commit the call already runs in a savepoint of its own, which makes its statements atomic, so
    nothing is begun here then.
    """
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:  # SQLite rolls back by itself on some errors (a full disk, an interrupt)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
