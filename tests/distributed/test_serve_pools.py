"""``batonflow serve --backend dbos`` sizes the pools an API process holds on PostgreSQL: its DBOS client's
(``--db-pool``, DBOS's 5 when omitted) and its event log's (``--events-pool``: a PostgreSQL log's statements, 10
when omitted), the two figures of docs/distributed.md's connection budget an API process adds."""

from __future__ import annotations

import pytest

from batonflow.cli import main, make_app
from batonflow.distributed import DBOSBackend, PostgresEventLog
from batonflow.errors import UserError
from batonflow.store import SqliteCheckpointStore

from .conftest import Cluster


def _pools(backend: DBOSBackend) -> tuple[int, int]:
    log = backend.event_log
    assert isinstance(log, PostgresEventLog)
    return backend._client._sys_db.engine.pool.size(), log.max_connections  # type: ignore[attr-defined]


@pytest.mark.parametrize(("options", "pools"), [({}, (5, 10)), ({"db_pool": 3, "events_pool": 4}, (3, 4))])
async def test_serve_sizes_the_client_pool_and_the_event_logs(
    cluster: Cluster, options: dict[str, int], pools: tuple[int, int]
) -> None:
    app = make_app(
        "tests.distributed.apps:agents",
        f"sqlite:{cluster.store_path}",
        None,
        backend="dbos",
        database_url=cluster.database_url,
        events_url=cluster.database_url,
        **options,
    )
    backend = app.state.batonflow.backend
    try:
        assert _pools(backend) == pools
    finally:
        await backend.close()


def test_pools_without_the_dbos_backend_are_refused(cluster: Cluster) -> None:
    with pytest.raises(UserError, match="--db-pool and --events-pool: expected --backend dbos"):
        make_app("tests.distributed.apps:agents", f"sqlite:{cluster.store_path}", None, db_pool=3)


@pytest.mark.parametrize("option", ["--db-pool", "--events-pool"])
def test_a_pool_of_no_connection_is_refused(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["serve", "tests.distributed.apps:agents", "--backend", "dbos", option, "0"]
    assert main([*args, "--database-url", "postgresql://nowhere/x", "--store", "sqlite:/tmp/x.db"]) == 2
    error = capsys.readouterr().err
    assert f"Invalid value for '{option}'" in error and "greater than or equal to 1" in error


def test_the_backends_client_pool_must_be_a_count() -> None:
    with pytest.raises(UserError, match="db_pool: expected an int of 1 or more, got 0"):
        DBOSBackend(SqliteCheckpointStore(":memory:"), database_url="postgresql://x/y", db_pool=0)
