"""Connection plumbing for the stores: one worker thread, and from their own modules the SQLite connection
(``_sqlite_conn``), the PostgreSQL pool and the Redis client (``_remote``).

A store only says what it stores: a worker thread owns blocking I/O, driver failures become ``StoreError`` messages
that name the backend, where it is and the operation, and the drivers are imported when a store is made, never
when ``batonflow.store`` is imported.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from ..errors import StoreError
from ._base import closed_error
from ._remote import PostgresPool, RedisConnection
from ._sqlite_conn import Schema, SqliteConnection, Synchronous, transaction

__all__ = [
    "PostgresPool",
    "RedisConnection",
    "Schema",
    "SqliteConnection",
    "Synchronous",
    "ThreadWorker",
    "transaction",
]

R = TypeVar("R")


class ThreadWorker:
    """One thread that runs a store's blocking calls in the order they were made.

    ``OSError`` (and any of ``errors``) raised by a call becomes a ``StoreError`` naming ``where`` and the operation.
    """

    def __init__(self, *, where: str, backend: str, name: str, errors: tuple[type[BaseException], ...] = ()) -> None:
        self.where = where
        self.backend = backend
        self._errors: tuple[type[BaseException], ...] = (OSError, *errors)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.closed = False

    async def run(self, operation: str, fn: Callable[[], R]) -> R:
        if self.closed:
            raise closed_error(self.where, self.backend)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        except self._errors as exc:
            raise StoreError(f"{self.where}: {operation}: {exc}", backend=self.backend) from exc

    async def close(self, last: Callable[[], None] | None = None) -> None:
        """Stop taking calls; run ``last`` (if given) on the worker thread after the calls already queued."""
        if self.closed:
            return
        self.closed = True
        try:
            if last is not None:
                await asyncio.get_running_loop().run_in_executor(self._executor, last)
        finally:
            self._executor.shutdown(wait=False)
