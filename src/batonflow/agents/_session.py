"""The conversation session: Solon's ``AgentSession``.

A ``Session`` holds one conversation across calls: its messages (never system messages, which agents build afresh
from their instructions), the window of them an agent is fed, shared attributes, a pending flag with its reason, and
the snapshot an interrupted run continues from (the runtime stores the run's checkpoint there). It is not the
per-run session of ``batonflow.adk``, which lives and dies with one run's checkpoint.

Persistence is explicit. Reading and changing a ``Session`` never touches its store; ``await session.save()`` writes
what changed since the session was loaded or last saved:

* messages added since then are appended to the stored list (so two workers adding to one conversation both land);
* after ``remove_latest`` or ``clear`` — or when the session was made with the constructor rather than ``load`` —
  the stored list is replaced by the session's messages;
* the state record (attributes, pending flag and reason, snapshot) is written whole, every time.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import UserError
from ..schema import Message
from ..store import MemorySessionStore, SessionData, SessionSaver, SessionState, SessionStore, check_session_id

__all__ = ["Session"]


class Session:
    """A conversation, kept in ``store`` (a private in-memory store when None) under ``session_id``.

    With ``max_messages``, only the latest that many messages are kept in memory and loaded; the oldest go first,
    and a tool-calling assistant message goes together with the tool results that answer it, so what remains never
    starts with an orphaned tool result. The store keeps the full list until a rewrite (see the module docstring).

    The constructor starts a new conversation under ``session_id``: its first ``save()`` replaces whatever the store
    held for that id. Use ``await Session.load(store, session_id)`` to continue a stored one.
    """

    def __init__(self, session_id: str, store: SessionStore | None = None, *, max_messages: int | None = None) -> None:
        self._session_id = check_session_id(session_id)
        if store is not None and not isinstance(store, SessionStore):
            raise UserError(f"expected a SessionStore (or None for memory), got {type(store).__qualname__}")
        self._store: SessionStore = MemorySessionStore() if store is None else store
        if max_messages is not None and (type(max_messages) is not int or max_messages < 1):
            raise UserError(f"max_messages must be None (no limit) or a count >= 1, got {max_messages!r}")
        self._max_messages = max_messages
        self._messages: list[Message] = []
        self._attrs: dict[str, Any] = {}
        self._pending = False
        self._pending_reason: str | None = None
        self._snapshot: bytes | None = None
        self._partial = False
        # What save() owes the store: messages to append, or a rewrite of the whole list.
        self._unsaved: list[Message] = []
        self._rewrite = True
        self._save_lock = asyncio.Lock()

    @classmethod
    async def load(
        cls, store: SessionStore, session_id: str, *, max_messages: int | None = None, window: int | None = None
    ) -> Session:
        """The session stored under ``session_id``, or a new empty one bound to ``store`` when there is none.

        With ``window``, only the messages ``latest(window)`` returns are read: the last ``window``, and as many
        before them as it takes to reach the user message that opens their turn (read in steps, each twice the
        last). ``messages`` then holds those; the older ones stay in the store, and saving appends after them, as it
        does past ``max_messages``. A conversation turn so costs the window, not the conversation.
        """
        session = cls(session_id, store, max_messages=max_messages)
        if window is not None and (type(window) is not int or window < 0):
            raise UserError(f"window must be None (every message) or a count >= 0, got {window!r}")
        # One message more than max_messages says whether older ones were cut off; trimming then drops exactly what
        # trimming message by message would have dropped (a tool result whose call fell outside goes too).
        last = None if max_messages is None else max_messages + 1
        if window is None:
            data, session._partial = await store.get(session_id, last=last), False
        else:
            data, session._partial = await _read_window(store, session_id, window, last)
        if data is not None:
            session._messages = [m for m in data.messages if m.role != "system"]
            session._trim()
            state = data.state
            session._attrs = state.attrs
            session._pending = state.pending
            session._pending_reason = state.pending_reason if state.pending else None
            session._snapshot = state.snapshot
        session._rewrite = False
        return session

    # -- identity ------------------------------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def partial(self) -> bool:
        """Whether the session was loaded with a ``window`` that left older messages unread in the store."""
        return self._partial

    @property
    def store(self) -> SessionStore:
        return self._store

    @property
    def max_messages(self) -> int | None:
        return self._max_messages

    # -- messages ------------------------------------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The conversation, oldest first (a new list: change the session through its methods)."""
        return list(self._messages)

    @property
    def is_empty(self) -> bool:
        return not self._messages

    def latest(self, n: int | None = None) -> list[Message]:
        """The window an agent is fed: about the last ``n`` messages (all of them for None).

        As the original's ``getLatestMessages``, the window is widened back to the user message that opened the turn
        it starts in, so a turn is never cut in half; with no user message at or before the cut, it moves forward to
        the first one after it. It never opens with a tool result whose call it leaves out. Unlike the original, 0
        means no message (there, any n <= 0 means all of them).
        """
        if n is None:
            return list(self._messages)
        if type(n) is not int or n < 0:
            raise UserError(f"latest(n) takes None (every message) or a count >= 0, got {n!r}")
        messages = self._messages
        size = len(messages)
        if n >= size:
            return list(messages)
        if n == 0:
            return []
        start = size - n
        opening = next((i for i in range(start, -1, -1) if messages[i].role == "user"), None)
        if opening is None:
            opening = next((i for i in range(start, size) if messages[i].role == "user"), None)
        if opening is not None:
            start = opening
        elif messages[start].role == "tool":
            call = start
            while call > 0 and messages[call].role == "tool":
                call -= 1
            if messages[call].role == "assistant" and messages[call].tool_calls:
                start = call  # keep the results with their call
            else:
                while start < size and messages[start].role == "tool":
                    start += 1  # results of a call that is not there at all
        return messages[start:]

    def add(self, *messages: Message) -> None:
        """Add messages at the end; system messages are dropped (the original never stores them either)."""
        for i, message in enumerate(messages):
            if not isinstance(message, Message):
                raise UserError(
                    f"Session.add takes messages, got {type(message).__qualname__} at position {i}"
                    + (" (unpack a list with add(*messages))" if isinstance(message, list | tuple) else "")
                )
        kept = [m for m in messages if m.role != "system"]
        self._messages.extend(kept)
        self._unsaved.extend(kept)
        self._trim()

    def remove_latest(self, n: int) -> None:
        """Remove the last ``n`` messages, counting a tool-calling assistant message and the tool results after it
        as one, so the conversation stays a valid transcript (the original's ``removeLatestMessage``)."""
        if type(n) is not int or n < 0:
            raise UserError(f"remove_latest(n) takes a count >= 0, got {n!r}")
        messages = self._messages
        removed = False
        for _ in range(n):
            if not messages:
                break
            removed = True
            if messages.pop().role == "tool":
                while messages and messages[-1].role == "tool":
                    messages.pop()
                if messages and messages[-1].role == "assistant" and messages[-1].tool_calls:
                    messages.pop()
        if removed:
            self._rewrite = True

    def clear(self) -> None:
        """Make this a new, empty session: no messages, attributes, pending flag or snapshot (as the original's file
        and Redis sessions, whose ``clear`` deletes both the messages and the snapshot)."""
        self._messages.clear()
        self._attrs = {}
        self._pending = False
        self._pending_reason = None
        self._snapshot = None
        self._unsaved = []
        self._rewrite = True

    # -- state ---------------------------------------------------------------------------------------------------

    @property
    def attrs(self) -> dict[str, Any]:
        """Shared state of the conversation, saved with it. Values must be encodable by the checkpoint codec
        (``batonflow.codec.register_type`` for your own classes); ``save()`` says which one is not."""
        return self._attrs

    def pending(self, flag: bool, reason: str | None = None) -> None:
        """Mark the session as waiting (for a person, an approval, an event), with an optional reason; ``pending(False)``
        clears both. In the original, a pending session stops the ReAct loop and every call starts by clearing it."""
        if type(flag) is not bool:
            raise UserError(f"pending(flag) takes True or False, got {flag!r}")
        if reason is not None and not isinstance(reason, str):
            raise UserError(f"a pending reason must be a string or None, got {type(reason).__qualname__}")
        if not flag and reason is not None:
            raise UserError("a pending reason goes with pending(True); pending(False) clears the reason")
        self._pending = flag
        self._pending_reason = reason

    @property
    def is_pending(self) -> bool:
        return self._pending

    @property
    def pending_reason(self) -> str | None:
        return self._pending_reason

    @property
    def snapshot(self) -> bytes | None:
        """What an interrupted run needs to continue: opaque bytes, put here by the runtime (its checkpoint)."""
        return self._snapshot

    @snapshot.setter
    def snapshot(self, data: bytes | bytearray | memoryview | None) -> None:
        if data is not None and not isinstance(data, bytes | bytearray | memoryview):
            raise UserError(f"a session snapshot is bytes or None, got {type(data).__qualname__}")
        self._snapshot = None if data is None else bytes(data)

    # -- persistence ---------------------------------------------------------------------------------------------

    async def save(self) -> None:
        """Write what changed since the session was loaded or last saved (see the module docstring), messages first,
        then the state record, so a stored snapshot never refers to messages the store does not have yet. A store
        that is a ``SessionSaver`` writes both in one transaction (one commit, one wait for the disk)."""
        if isinstance(self._store, SessionSaver):
            await self._save_at_once(self._store)
            return
        async with self._save_lock:
            # A failed or cancelled write may or may not have landed; owing it again loses nothing, at the price of a
            # possible duplicate append on the retry.
            if self._rewrite:
                self._rewrite, self._unsaved = False, []
                try:
                    await self._store.replace_messages(self._session_id, list(self._messages))
                except BaseException:
                    self._rewrite = True
                    raise
            elif self._unsaved:
                batch, self._unsaved = self._unsaved, []
                try:
                    await self._store.append_messages(self._session_id, batch)
                except BaseException:
                    self._unsaved = batch + self._unsaved
                    raise
            await self._store.set_state(
                self._session_id,
                SessionState(
                    attrs=self._attrs,
                    pending=self._pending,
                    pending_reason=self._pending_reason,
                    snapshot=self._snapshot,
                ),
            )

    async def _save_at_once(self, store: SessionSaver) -> None:
        async with self._save_lock:
            replace = self._rewrite
            batch = list(self._messages) if replace else self._unsaved
            self._rewrite, self._unsaved = False, []
            try:
                await store.save_session(self._session_id, self._state(), messages=batch, replace=replace)
            except BaseException:  # owed again, as in save()
                if replace:
                    self._rewrite = True
                else:
                    self._unsaved = batch + self._unsaved
                raise

    def _state(self) -> SessionState:
        return SessionState(
            attrs=self._attrs, pending=self._pending, pending_reason=self._pending_reason, snapshot=self._snapshot
        )

    def _trim(self) -> None:
        # The original drops the oldest messages once the list is past max_messages (InMemoryChatSession's
        # removeNonSystemMessages), taking the tool results of a dropped call along. It drops as many as the batch
        # just added, which can leave fewer than max_messages; we drop only what is over.
        if self._max_messages is None:
            return
        messages = self._messages
        cut = len(messages) - self._max_messages
        if cut <= 0:
            return
        while cut < len(messages) and messages[cut].role == "tool":
            cut += 1
        del messages[:cut]

    def __repr__(self) -> str:
        pending = f", pending={self._pending_reason!r}" if self._pending else ""
        return f"Session({self._session_id!r}, messages={len(self._messages)}{pending})"


async def _read_window(
    store: SessionStore, session_id: str, window: int, last: int | None
) -> tuple[SessionData | None, bool]:
    """What ``store`` holds for ``session_id``, with at least the messages ``latest(window)`` returns (at most
    ``last``), and whether older messages were left unread. Each read is one ``get``, messages and state of one
    moment; the last read is the answer."""
    want = max(window, 1)  # the state is read with at least one message: get takes no 0
    while True:
        if last is not None:
            want = min(want, last)
        # One message more than wanted says whether older ones stay unread (no window needs none).
        data = await store.get(session_id, last=want + 1 if window else 1)
        if data is None or len(data.messages) <= want:
            return data, False  # every message there is
        if want == last or window == 0:
            return data, True  # as many as the session keeps, or all the window needs
        kept = [m for m in data.messages if m.role != "system"]
        start = len(kept) - window
        if start >= 0 and any(m.role == "user" for m in kept[: start + 1]):
            return data, True  # the turn the window starts in opens inside what was read
        want *= 2
