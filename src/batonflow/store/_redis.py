"""Checkpoints in Redis: shared by every worker that can reach the server.

A checkpoint is one string key (``SET`` replaces it atomically). A lease is a key of its own with a
server-side expiry; claiming, releasing, reading and breaking it are small Lua scripts (``_lease_redis``), so "free,
or mine" and "delete if mine" are each one atomic step on the server and an expired lease simply no longer exists.
A fenced write is a script too, which checks the lease and writes the checkpoint in the same step.
"""

from __future__ import annotations

from typing import cast

from ..codec import DEFAULT_LIMITS, DecodeLimits
from ._base import Lease, StoreBase, check_checkpoint_id, check_owner, check_ttl
from ._conn import RedisConnection
from ._history import KeepsHistory
from ._lease import check_fence
from ._lease_redis import (
    REDIS_BREAK,
    REDIS_CLAIM,
    REDIS_FENCED_WRITE,
    REDIS_HOLDER,
    REDIS_RENEW,
    redis_lease,
    redis_ttl_ms,
)

__all__ = ["RedisCheckpointStore"]


class RedisCheckpointStore(KeepsHistory, StoreBase):
    """A checkpoint store in the Redis server at ``url`` (``redis://[:password@]host:port/db``).

    Checkpoints live under ``<prefix>data:<id>``, leases under ``<prefix>lease:<id>``: two namespaces, so no checkpoint
    id can name another's lease. ``connect_timeout`` (5 s by default) bounds making a connection and ``timeout`` (10 s)
    each command's wait for its answer; a command is retried once after a connection error, never after a timeout. Its
    ``StoreError`` says which happened: "could not connect (...): nothing was written", or "no answer within 10 s: the
    write may or may not have landed" (a read: "no answer within 10 s"). It uses at most ``max_connections``
    connections; a command that finds them all busy waits up to ``pool_timeout`` seconds (None: as long as it takes) for
    one, so any number of concurrent runs can share the store. ``limits`` bound what decoding a checkpoint read from it
    may cost (``DecodeLimits``): the Runner decodes with them.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "batonflow:ckpt:",
        connect_timeout: float = 5.0,
        timeout: float = 10.0,
        max_connections: int = 10,
        pool_timeout: float | None = 10.0,
        limits: DecodeLimits = DEFAULT_LIMITS,
    ) -> None:
        self.limits = limits
        self._prefix = prefix
        self._conn = RedisConnection(
            url,
            who="RedisCheckpointStore",
            what="checkpoint store",
            connect_timeout=connect_timeout,
            timeout=timeout,
            max_connections=max_connections,
            pool_timeout=pool_timeout,
        )
        self._client = self._conn.client
        self._claim = self._client.register_script(REDIS_CLAIM)
        self._renew = self._client.register_script(REDIS_RENEW)
        self._break = self._client.register_script(REDIS_BREAK)
        self._holder = self._client.register_script(REDIS_HOLDER)
        self._fenced_write = self._client.register_script(REDIS_FENCED_WRITE)

    def _data_key(self, checkpoint_id: str) -> str:
        return f"{self._prefix}data:{checkpoint_id}"

    def _lease_key(self, checkpoint_id: str) -> str:
        return f"{self._prefix}lease:{checkpoint_id}"

    # -- the store -----------------------------------------------------------------------------------------------

    async def get(self, checkpoint_id: str) -> bytes | None:
        check_checkpoint_id(checkpoint_id)
        self._conn.check_open()
        try:
            data = await self._client.get(self._data_key(checkpoint_id))
        except self._conn.errors as exc:
            raise self._conn.error(f"read checkpoint {checkpoint_id!r}", exc, read=True) from exc
        return cast("bytes | None", data)  # decode_responses is off: Redis strings come back as bytes

    async def set(self, checkpoint_id: str, data: bytes, *, owner: str | None = None) -> None:
        check_checkpoint_id(checkpoint_id)
        if owner is not None:
            await self._fenced(checkpoint_id, check_owner(owner), "set", bytes(data))
            return
        self._conn.check_open()
        try:
            await self._client.set(self._data_key(checkpoint_id), bytes(data))
        except self._conn.errors as exc:
            raise self._conn.error(f"write checkpoint {checkpoint_id!r}", exc) from exc

    async def delete(self, checkpoint_id: str, *, owner: str | None = None) -> None:
        check_checkpoint_id(checkpoint_id)
        if owner is not None:
            await self._fenced(checkpoint_id, check_owner(owner), "delete", b"")
            return
        self._conn.check_open()
        try:
            await self._client.delete(self._data_key(checkpoint_id))
        except self._conn.errors as exc:
            raise self._conn.error(f"delete checkpoint {checkpoint_id!r}", exc) from exc

    async def claim(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        ttl_ms = redis_ttl_ms(check_ttl(ttl))
        self._conn.check_open()
        try:
            won = await self._claim(keys=[self._lease_key(checkpoint_id)], args=[owner, ttl_ms])
        except self._conn.errors as exc:
            raise self._conn.error(f"claim checkpoint {checkpoint_id!r}", exc) from exc
        return bool(won)

    async def renew(self, checkpoint_id: str, owner: str, ttl: float) -> bool:
        """Extend ``owner``'s unexpired lease; False when it lapsed or is another's (see ``_lease_redis``)."""
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        ttl_ms = redis_ttl_ms(check_ttl(ttl))
        self._conn.check_open()
        try:
            held = await self._renew(keys=[self._lease_key(checkpoint_id)], args=[owner, ttl_ms])
        except self._conn.errors as exc:
            raise self._conn.error(f"renew checkpoint {checkpoint_id!r}", exc) from exc
        return bool(held)

    async def release(self, checkpoint_id: str, owner: str) -> None:
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        self._conn.check_open()
        try:
            await self._break(keys=[self._lease_key(checkpoint_id)], args=[owner])
        except self._conn.errors as exc:
            raise self._conn.error(f"release checkpoint {checkpoint_id!r}", exc) from exc

    async def holder(self, checkpoint_id: str) -> Lease | None:
        check_checkpoint_id(checkpoint_id)
        self._conn.check_open()
        try:
            reply = await self._holder(keys=[self._lease_key(checkpoint_id)])
        except self._conn.errors as exc:
            raise self._conn.error(f"read the lease of checkpoint {checkpoint_id!r}", exc, read=True) from exc
        return redis_lease(reply)

    async def break_lease(self, checkpoint_id: str, owner: str) -> bool:
        check_checkpoint_id(checkpoint_id)
        check_owner(owner)
        self._conn.check_open()
        try:
            broken = await self._break(keys=[self._lease_key(checkpoint_id)], args=[owner])
        except self._conn.errors as exc:
            raise self._conn.error(f"break the lease of checkpoint {checkpoint_id!r}", exc) from exc
        return bool(broken)

    async def _fenced(self, checkpoint_id: str, owner: str, action: str, data: bytes) -> None:
        self._conn.check_open()
        keys = [self._lease_key(checkpoint_id), self._data_key(checkpoint_id)]
        verb = "write" if action == "set" else "delete"
        try:
            reply = await self._fenced_write(keys=keys, args=[owner, action, data])
        except self._conn.errors as exc:
            raise self._conn.error(f"{verb} checkpoint {checkpoint_id!r}", exc) from exc
        if reply != 1:
            check_fence(checkpoint_id, owner, redis_lease(reply), deleting=action == "delete")

    async def close(self) -> None:
        self._closed = True
        await self._conn.close()
