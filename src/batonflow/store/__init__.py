"""Persistence: the checkpoint codec and the checkpoint stores (DESIGN §2.7, §7).

``encode``/``decode`` turn checkpoints into versioned, checksummed bytes and back; ``register_type`` lets user
dataclasses, pydantic models and enums travel in them. A ``CheckpointStore`` keeps the bytes and hands out resume
leases: ``MemoryCheckpointStore``, ``SqliteCheckpointStore`` (the embedded default), and, with their extras,
``PostgresCheckpointStore`` (``batonflow[postgres]``) and ``RedisCheckpointStore`` (``batonflow[redis]``).
"""

from ..errors import CodecError as CodecError
from ..errors import StoreError as StoreError
from ._base import CheckpointStore as CheckpointStore
from ._codec import CODEC_VERSION as CODEC_VERSION
from ._codec import decode as decode
from ._codec import encode as encode
from ._memory import MemoryCheckpointStore as MemoryCheckpointStore
from ._postgres import PostgresCheckpointStore as PostgresCheckpointStore
from ._redis import RedisCheckpointStore as RedisCheckpointStore
from ._registry import register_builtin_types as register_builtin_types
from ._registry import register_type as register_type
from ._sqlite import SqliteCheckpointStore as SqliteCheckpointStore

__all__ = [
    "CODEC_VERSION",
    "CheckpointStore",
    "CodecError",
    "MemoryCheckpointStore",
    "PostgresCheckpointStore",
    "RedisCheckpointStore",
    "SqliteCheckpointStore",
    "StoreError",
    "decode",
    "encode",
    "register_builtin_types",
    "register_type",
]
