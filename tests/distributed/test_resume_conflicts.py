"""Concurrent resumes of one pause through two real API processes (``batonflow serve`` on the DBOS backend), one
answering "yes" and the other "no": exactly one is answered 200, the other 409 ``resume_conflict`` naming the
winner, and the run's outcome is the winner's."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from .conftest import REDIS_URL, ROOT, Cluster, Worker, serve_command

WAIT = 30.0  # a guard against a hang, not a measure
TRIALS = 4
OUTCOMES = {"yes": "order 7: shipped", "no": "order 7: not shipped"}


def _serve(cluster: Cluster) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    command = serve_command(cluster, port, "--redis-url", REDIS_URL)
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), (
        f"http://127.0.0.1:{port}"
    )


@pytest.fixture(scope="module")
def apis(cluster: Cluster, worker: Worker) -> Iterator[tuple[str, str]]:
    started = [_serve(cluster), _serve(cluster)]
    try:
        deadline = time.monotonic() + WAIT
        for process, base in started:
            while True:
                try:
                    httpx.get(f"{base}/health", timeout=1).raise_for_status()
                    break
                except httpx.HTTPError:
                    assert process.poll() is None and time.monotonic() < deadline, "batonflow serve did not come up"
                    time.sleep(0.05)
        yield started[0][1], started[1][1]
    finally:
        for process, _ in started:
            process.terminate()
            process.wait(10)


async def test_concurrent_resumes_through_two_api_processes_have_one_winner_and_the_loser_is_told(
    apis: tuple[str, str],
) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as client:
        for _ in range(TRIALS):
            checkpoint_id = f"race-{uuid.uuid4().hex[:8]}"
            paused = await client.post(
                f"{apis[0]}/runs", json={"agent": "shipper", "input": "ship", "checkpoint_id": checkpoint_id}
            )
            key = paused.json()["interrupts"][0]["id"]
            answers = await asyncio.gather(
                *(
                    client.post(f"{base}/checkpoints/{checkpoint_id}/resume", json={"targets": {key: said}})
                    for base, said in zip(apis, ("yes", "no"), strict=True)
                )
            )
            statuses = sorted(answer.status_code for answer in answers)
            assert statuses == [200, 409], [answer.text for answer in answers]
            won = next(answer for answer in answers if answer.status_code == 200).json()
            lost = next(answer for answer in answers if answer.status_code == 409).json()["error"]
            said = "yes" if answers[0].status_code == 200 else "no"
            assert lost["code"] == "resume_conflict" and lost["found"]["run_id"] == won["run_id"]
            assert won["text"] == OUTCOMES[said]
            outcome = (await client.get(f"{apis[1]}/runs/{won['run_id']}")).json()
            assert (outcome["status"], outcome["text"]) == ("completed", OUTCOMES[said])
