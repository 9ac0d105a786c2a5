"""Persistence: the checkpoint codec, the checkpoint stores and the session stores.

``encode``/``decode`` turn checkpoints into versioned, checksummed bytes and back (``encode_json``/``decode_json``
into plain JSON text, for snapshots kept as documents), writing each message once (and,
once ``encode_cache`` is given a size, re-using the text of the messages it remembers unchanged); ``register_type`` lets user dataclasses,
pydantic models and enums travel in them, and ``registered_types()`` lists every class a payload may name. A ``CheckpointStore`` keeps the bytes and hands out resume leases: ``MemoryCheckpointStore``,
``SqliteCheckpointStore`` (the embedded default), and, with their extras, ``PostgresCheckpointStore``
(``batonflow[postgres]``) and ``RedisCheckpointStore`` (``batonflow[redis]``). Each is a ``FencedCheckpointStore``:
``holder`` tells who holds a lease (a ``Lease``), ``break_lease`` ends one only for the owner named, and ``set`` and
``delete`` given an ``owner`` write only while that owner holds the lease (else ``LeaseLostError``). Checkpoint and session ids follow one
rule on every backend (``check_id``: non-empty, at most ``MAX_ID_BYTES`` bytes of UTF-8, no NUL, no lone surrogate).
A ``SessionStore`` keeps conversations across runs (messages, state, the snapshot of a pending run) on the same
backends, plus ``FileSessionStore`` (ndjson messages and a JSON snapshot, as Solon's file session); their leases can
be inspected and broken in the same way (``InspectableLeases``).
"""

from ..errors import CodecError as CodecError
from ..errors import LeaseLostError as LeaseLostError
from ..errors import StoreError as StoreError
from ._base import MAX_ID_BYTES as MAX_ID_BYTES
from ._base import CheckpointStore as CheckpointStore
from ._base import FencedCheckpointStore as FencedCheckpointStore
from ._base import InspectableLeases as InspectableLeases
from ._base import Lease as Lease
from ._base import check_checkpoint_id as check_checkpoint_id
from ._base import check_id as check_id
from ._codec import CODEC_VERSION as CODEC_VERSION
from ._codec import DecodeLimits as DecodeLimits
from ._codec import decode as decode
from ._codec import decode_json as decode_json
from ._codec import encode as encode
from ._codec import encode_async as encode_async
from ._codec import encode_json as encode_json
from ._fits import CACHE_SIZE as CACHE_SIZE
from ._fits import EncodeCache as EncodeCache
from ._fits import cache as encode_cache
from ._memory import MemoryCheckpointStore as MemoryCheckpointStore
from ._postgres import PostgresCheckpointStore as PostgresCheckpointStore
from ._redis import RedisCheckpointStore as RedisCheckpointStore
from ._registry import register_builtin_types as register_builtin_types
from ._registry import register_type as register_type
from ._registry import registered_types as registered_types
from ._session_file import FileSessionStore as FileSessionStore
from ._session_redis import RedisSessionStore as RedisSessionStore
from ._session_sql import PostgresSessionStore as PostgresSessionStore
from ._session_sql import SqliteSessionStore as SqliteSessionStore
from ._sessions import MemorySessionStore as MemorySessionStore
from ._sessions import SessionData as SessionData
from ._sessions import SessionState as SessionState
from ._sessions import SessionStore as SessionStore
from ._sessions import check_session_id as check_session_id
from ._share import SharedObjects as SharedObjects
from ._sqlite import SqliteCheckpointStore as SqliteCheckpointStore

__all__ = [
    "CACHE_SIZE",
    "CODEC_VERSION",
    "MAX_ID_BYTES",
    "CheckpointStore",
    "CodecError",
    "DecodeLimits",
    "EncodeCache",
    "FencedCheckpointStore",
    "FileSessionStore",
    "InspectableLeases",
    "Lease",
    "LeaseLostError",
    "MemoryCheckpointStore",
    "MemorySessionStore",
    "PostgresCheckpointStore",
    "PostgresSessionStore",
    "RedisCheckpointStore",
    "RedisSessionStore",
    "SessionData",
    "SessionState",
    "SessionStore",
    "SharedObjects",
    "SqliteCheckpointStore",
    "SqliteSessionStore",
    "StoreError",
    "check_checkpoint_id",
    "check_id",
    "check_session_id",
    "decode",
    "decode_json",
    "encode",
    "encode_async",
    "encode_cache",
    "encode_json",
    "register_builtin_types",
    "register_type",
    "registered_types",
]
