"""Sessions in Redis: shared by every worker that can reach the server.

The keys are the original's (Solon's ``RedisAgentSession``), under a prefix: ``<prefix><id>:messages``
is a list with one codec payload per message, ``<prefix><id>:snapshot`` a string with the state record (Solon keeps
its whole ``FlowContext`` there, which is what the record is: attributes, pending flag and reason, snapshot).
``RPUSH`` of a batch is one command, so concurrent appends never interleave; replacing, deleting and reading are
``MULTI``/``EXEC`` transactions, so each is one atomic step on the server. A worker resuming the session's pending
run holds ``<prefix><id>:lease``, a key that expires on the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from ..codec import DEFAULT_LIMITS, DecodeLimits
from ..schema import Message
from ._base import Lease, StoreBase, check_owner, check_ttl
from ._conn import RedisConnection
from ._lease_redis import REDIS_BREAK, REDIS_CLAIM, REDIS_HOLDER, REDIS_RENEW, redis_lease, redis_ttl_ms
from ._sessions import (
    SessionData,
    SessionState,
    build_data,
    check_last,
    check_session_id,
    encode_messages,
    encode_state,
)

__all__ = ["RedisSessionStore"]


class RedisSessionStore(StoreBase):
    """A session store in the Redis server at ``url`` (``redis://[:password@]host:port/db``).

    A session's keys are ``<prefix><id>:messages``, ``<prefix><id>:snapshot`` and, while a worker resumes it,
    ``<prefix><id>:lease``; the suffixes differ, so no id can name another id's key. ``connect_timeout`` (5 s by
    default) bounds making a connection and ``timeout`` (10 s) each command's wait for its answer; a command is retried
    once after a connection error, never after a timeout. Its ``StoreError`` says which happened: "could not connect
    (...): nothing was written", or "no answer within 10 s: the write may or may not have landed" (a read: "no answer
    within 10 s"). It uses at most ``max_connections`` connections; a command that finds them all busy waits up to
    ``pool_timeout`` seconds (None: as long as it takes) for one, so any number of concurrent runs can share the store.
    ``limits`` bound what decoding a stored value may cost (``DecodeLimits``).
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "batonflow:session:",
        connect_timeout: float = 5.0,
        timeout: float = 10.0,
        max_connections: int = 10,
        pool_timeout: float | None = 10.0,
        limits: DecodeLimits = DEFAULT_LIMITS,
    ) -> None:
        self.limits = limits
        self._prefix = prefix
        self._redis = RedisConnection(
            url,
            who="RedisSessionStore",
            what="session store",
            connect_timeout=connect_timeout,
            timeout=timeout,
            max_connections=max_connections,
            pool_timeout=pool_timeout,
        )
        self._claim = self._redis.client.register_script(REDIS_CLAIM)
        self._renew = self._redis.client.register_script(REDIS_RENEW)
        self._break = self._redis.client.register_script(REDIS_BREAK)
        self._holder = self._redis.client.register_script(REDIS_HOLDER)

    def _messages_key(self, session_id: str) -> str:
        return f"{self._prefix}{session_id}:messages"

    def _snapshot_key(self, session_id: str) -> str:
        return f"{self._prefix}{session_id}:snapshot"

    def _lease_key(self, session_id: str) -> str:
        return f"{self._prefix}{session_id}:lease"

    async def get(self, session_id: str, *, last: int | None = None) -> SessionData | None:
        check_session_id(session_id)
        check_last(last)
        self._redis.check_open()
        try:
            async with self._redis.client.pipeline(transaction=True) as pipe:
                pipe.lrange(self._messages_key(session_id), 0 if last is None else -last, -1)
                pipe.get(self._snapshot_key(session_id))
                replies = await pipe.execute()
        except self._redis.errors as exc:
            raise self._redis.error(f"read session {session_id!r}", exc, read=True) from exc
        # decode_responses is off: Redis strings come back as bytes
        return build_data(session_id, cast("list[bytes]", replies[0]), cast("bytes | None", replies[1]), self.limits)

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        check_session_id(session_id)
        data = encode_messages(session_id, messages, self.limits)
        if not data:
            return
        self._redis.check_open()
        try:
            await self._redis.client.rpush(self._messages_key(session_id), *data)
        except self._redis.errors as exc:
            raise self._redis.error(f"append to session {session_id!r}", exc) from exc

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        check_session_id(session_id)
        data = encode_messages(session_id, messages, self.limits)
        self._redis.check_open()
        key = self._messages_key(session_id)
        try:
            async with self._redis.client.pipeline(transaction=True) as pipe:
                pipe.delete(key)
                if data:
                    pipe.rpush(key, *data)
                await pipe.execute()
        except self._redis.errors as exc:
            raise self._redis.error(f"replace the messages of session {session_id!r}", exc) from exc

    async def set_state(self, session_id: str, state: SessionState) -> None:
        check_session_id(session_id)
        data = encode_state(session_id, state, self.limits)
        self._redis.check_open()
        try:
            await self._redis.client.set(self._snapshot_key(session_id), data)
        except self._redis.errors as exc:
            raise self._redis.error(f"write the state of session {session_id!r}", exc) from exc

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        self._redis.check_open()
        try:
            await self._redis.client.delete(self._messages_key(session_id), self._snapshot_key(session_id))
        except self._redis.errors as exc:
            raise self._redis.error(f"delete session {session_id!r}", exc) from exc

    async def claim(self, session_id: str, owner: str, ttl: float) -> bool:
        check_session_id(session_id)
        check_owner(owner)
        ttl_ms = redis_ttl_ms(check_ttl(ttl))
        self._redis.check_open()
        try:
            won = await self._claim(keys=[self._lease_key(session_id)], args=[owner, ttl_ms])
        except self._redis.errors as exc:
            raise self._redis.error(f"claim session {session_id!r}", exc) from exc
        return bool(won)

    async def renew(self, session_id: str, owner: str, ttl: float) -> bool:
        """Extend ``owner``'s unexpired lease; False when it lapsed or is another's."""
        check_session_id(session_id)
        check_owner(owner)
        ttl_ms = redis_ttl_ms(check_ttl(ttl))
        self._redis.check_open()
        try:
            held = await self._renew(keys=[self._lease_key(session_id)], args=[owner, ttl_ms])
        except self._redis.errors as exc:
            raise self._redis.error(f"renew session {session_id!r}", exc) from exc
        return bool(held)

    async def release(self, session_id: str, owner: str) -> None:
        check_session_id(session_id)
        check_owner(owner)
        self._redis.check_open()
        try:
            await self._break(keys=[self._lease_key(session_id)], args=[owner])
        except self._redis.errors as exc:
            raise self._redis.error(f"release session {session_id!r}", exc) from exc

    async def holder(self, session_id: str) -> Lease | None:
        check_session_id(session_id)
        self._redis.check_open()
        try:
            reply = await self._holder(keys=[self._lease_key(session_id)])
        except self._redis.errors as exc:
            raise self._redis.error(f"read the lease of session {session_id!r}", exc, read=True) from exc
        return redis_lease(reply)

    async def break_lease(self, session_id: str, owner: str) -> bool:
        check_session_id(session_id)
        check_owner(owner)
        self._redis.check_open()
        try:
            broken = await self._break(keys=[self._lease_key(session_id)], args=[owner])
        except self._redis.errors as exc:
            raise self._redis.error(f"break the lease of session {session_id!r}", exc) from exc
        return bool(broken)

    async def close(self) -> None:
        self._closed = True
        await self._redis.close()
