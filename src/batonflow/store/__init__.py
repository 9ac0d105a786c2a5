"""Persistence: the checkpoint stores and the session stores.

A ``CheckpointStore`` keeps the bytes the codec (``batonflow.codec``) makes and hands out resume leases:
``MemoryCheckpointStore``, ``SqliteCheckpointStore`` (the embedded default), and, with their extras,
``PostgresCheckpointStore`` (``batonflow[postgres]``) and ``RedisCheckpointStore`` (``batonflow[redis]``). Each is a
``FencedCheckpointStore``: ``holder`` tells who holds a lease (a ``Lease``), ``break_lease`` ends one only for the
owner named, and ``set`` and ``delete`` given an ``owner`` write only while that owner holds the lease (else
``LeaseLostError``). Checkpoint and session ids follow one rule on every backend (``check_id``: non-empty, at most
``MAX_ID_BYTES`` bytes of UTF-8, no NUL, no lone surrogate). A ``SessionStore`` keeps conversations across runs
(messages, state, the snapshot of a pending run) on the same backends, plus ``FileSessionStore`` (ndjson messages
and a JSON snapshot, as Solon's file session); their leases can be inspected and broken in the same way
(``InspectableLeases``).

The codec's names (``encode``, ``decode``, ``encode_json``, ``decode_json``, ``register_type``, ``DecodeLimits``,
``CodecError``, ...) are re-exported here, where they lived before ``batonflow.codec`` was a package of its own:
code that imports them from ``batonflow.store`` keeps working; new code imports them from ``batonflow.codec``.
"""

from ..codec import CACHE_SIZE as CACHE_SIZE
from ..codec import CODEC_VERSION as CODEC_VERSION
from ..codec import CodecError as CodecError
from ..codec import DecodeLimits as DecodeLimits
from ..codec import EncodeCache as EncodeCache
from ..codec import SharedObjects as SharedObjects
from ..codec import decode as decode
from ..codec import decode_json as decode_json
from ..codec import encode as encode
from ..codec import encode_async as encode_async
from ..codec import encode_cache as encode_cache
from ..codec import encode_json as encode_json
from ..codec import register_builtin_types as register_builtin_types
from ..codec import register_type as register_type
from ..codec import registered_types as registered_types
from ..errors import LeaseLostError as LeaseLostError
from ..errors import StoreError as StoreError
from ._base import MAX_ID_BYTES as MAX_ID_BYTES
from ._base import CheckpointStore as CheckpointStore
from ._base import FencedCheckpointStore as FencedCheckpointStore
from ._base import InspectableLeases as InspectableLeases
from ._base import Lease as Lease
from ._base import check_checkpoint_id as check_checkpoint_id
from ._base import check_id as check_id
from ._history import HistoryRetention as HistoryRetention
from ._history import load_history as load_history
from ._history import save_history as save_history
from ._memory import MemoryCheckpointStore as MemoryCheckpointStore
from ._postgres import PostgresCheckpointStore as PostgresCheckpointStore
from ._redis import RedisCheckpointStore as RedisCheckpointStore
from ._session_file import FileSessionStore as FileSessionStore
from ._session_redis import RedisSessionStore as RedisSessionStore
from ._session_sql import PostgresSessionStore as PostgresSessionStore
from ._session_sql import SqliteSessionStore as SqliteSessionStore
from ._sessions import MemorySessionStore as MemorySessionStore
from ._sessions import SessionData as SessionData
from ._sessions import SessionSaver as SessionSaver
from ._sessions import SessionState as SessionState
from ._sessions import SessionStore as SessionStore
from ._sessions import check_session_id as check_session_id
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
    "HistoryRetention",
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
    "SessionSaver",
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
    "load_history",
    "register_builtin_types",
    "register_type",
    "registered_types",
    "save_history",
]
