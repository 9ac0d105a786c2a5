"""A fresh process reading a run's history: ``history_child.py DB RUN`` prints its steps as JSON."""

import asyncio
import json
import sys

from batonflow.adk import ChatModelAgent, Runner
from batonflow.store import SqliteCheckpointStore
from batonflow.testing import ScriptedModel


async def main(path: str, run_id: str) -> None:
    store = SqliteCheckpointStore(path=path)
    try:
        history = await Runner(ChatModelAgent(name="any", model=ScriptedModel([])), checkpoint_store=store).history(
            run_id
        )
        print(json.dumps([[s.index, s.kind, s.agent_name, s.summary] for s in history]))
    finally:
        await store.close()


asyncio.run(main(sys.argv[1], sys.argv[2]))
