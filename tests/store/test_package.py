"""The public face of batonflow.store."""

from __future__ import annotations

import batonflow.store


def test_public_api_is_pinned() -> None:
    assert sorted(batonflow.store.__all__) == [
        "CACHE_SIZE",
        "CODEC_VERSION",
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
        "MAX_ID_BYTES",
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
    for name in batonflow.store.__all__:
        assert hasattr(batonflow.store, name)


def test_importing_the_store_does_not_import_the_drivers() -> None:
    # The optional backends import asyncpg and redis when a store is made, so the package imports without extras.
    import subprocess
    import sys

    code = "import sys, batonflow.store; print('asyncpg' in sys.modules, 'redis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
