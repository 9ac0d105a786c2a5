"""``python -m tests.distributed.faulty worker …``: ``batonflow worker`` whose sweep kills its own process between
claiming a dead worker and handing that worker's segments on (exit status 17), as a crash there would."""

from __future__ import annotations

import os
import sys

from batonflow.cli import main
from batonflow.distributed import DBOSWorker

CLAIMED_EXIT = 17


def _die(executor: str) -> None:
    print(f"faulty sweeper: claimed {executor}, dying before the hand-off", flush=True)
    os._exit(CLAIMED_EXIT)


if __name__ == "__main__":
    DBOSWorker.after_sweep_claim = staticmethod(_die)
    sys.exit(main(sys.argv[1:]))
