"""The PostgreSQL and Redis servers the tests use, named in one place: ``BATONFLOW_TEST_POSTGRES_DSN`` (a database
the tests make their tables and databases from) and ``BATONFLOW_TEST_REDIS_URL`` (a Redis database the tests put
their keys in), by default the ``test`` database and Redis database 0 on 127.0.0.1 that ``scripts/services`` sets
up. Each test puts its tables and keys under a name of its own and removes them; tests/conftest.py checks that a
session leaves none behind."""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlsplit

import psycopg
import redis
from psycopg import sql

POSTGRES_DSN = os.environ.get("BATONFLOW_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("BATONFLOW_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

_redis = urlsplit(REDIS_URL)
REDIS_SERVER = f"{_redis.hostname}:{_redis.port or 6379}"  # host:port, as a flow's redisConfig names its server
REDIS_DB = int(_redis.path.lstrip("/") or 0)
DATABASE = urlsplit(POSTGRES_DSN).path.lstrip("/") or "postgres"


def new_database_name(kind: str) -> str:
    """A name for a database a test makes beside its own: under the tests' database's name, so that the check for
    leftovers tells these from the databases of other runs on the same server."""
    return f"{DATABASE}__{kind}_{uuid.uuid4().hex[:12]}"


def drop_tables(*tables: str) -> None:
    """Drops the tables a test made in the tests' database (a checkpoint store's ``T`` and ``T_leases``, say)."""
    with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
        for table in tables:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


def delete_keys(prefix: str) -> None:
    """Deletes the keys a test made under ``prefix`` in the tests' Redis database."""
    with redis.Redis.from_url(REDIS_URL) as client:
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
