"""Durable run segments on a pool of workers: the ``DurableBackend`` seam, whose unit of work is a run segment
(load the checkpoint, run until an interrupt or the end, save), and its backends. ``InProcessBackend`` runs
segments in this process (the default), their live frames in a ``MemoryEventLog``; ``DBOSBackend`` enqueues them on PostgreSQL for
``DBOSWorker`` processes (``batonflow worker``) to run, through DBOS Transact (the ``dbos`` extra), their live
events in an ``EventLog``: a Redis Stream per run (``RedisEventLog``, the ``redis`` extra) or, without Redis,
PostgreSQL tables woken by LISTEN/NOTIFY (``PostgresEventLog``). In step mode a worker keeps each finished model
reply and tool result of a segment in a ``StepTable`` (``StepMode``; ``SegmentSteps`` is one segment's recorder).
What a log holds is frames, JSON made where the run runs; the server reads them with ``body_of`` and shows its own
answers with the same functions (``json_text``, ``jsonable``, ``message_json``, ``error_json``).
"""

from typing import Any

from ._backend import DurableBackend as DurableBackend
from ._backend import InProcessBackend as InProcessBackend
from ._backend import LiveBackend as LiveBackend
from ._backend import PausedRun as PausedRun
from ._events import EventLog as EventLog
from ._events import EventRecord as EventRecord
from ._events import Numbering as Numbering
from ._events import RedisEventLog as RedisEventLog
from ._events import event_log_at as event_log_at
from ._events import publish_end as publish_end
from ._events import watch_cancels as watch_cancels
from ._frames import body_of as body_of
from ._frames import delta_text as delta_text
from ._frames import error_json as error_json
from ._frames import json_text as json_text
from ._frames import jsonable as jsonable
from ._frames import message_json as message_json
from ._frames import replay_json as replay_json
from ._memevents import EventsGoneError as EventsGoneError
from ._memevents import MemoryEventLog as MemoryEventLog
from ._pgevents import PostgresEventLog as PostgresEventLog
from ._segment import EventSink as EventSink
from ._segment import SegmentClaim as SegmentClaim
from ._segment import SegmentOutcome as SegmentOutcome
from ._segment import SegmentRequest as SegmentRequest
from ._segment import request_digest as request_digest
from ._segment import run_segment as run_segment
from ._segment import segment_id as segment_id

__all__ = [
    "APP_VERSION",
    "CodecSerializer",
    "DBOSBackend",
    "DBOSWorker",
    "DurableBackend",
    "EventLog",
    "EventRecord",
    "EventSink",
    "EventsGoneError",
    "FailedSegment",
    "InProcessBackend",
    "LiveBackend",
    "MemoryEventLog",
    "Numbering",
    "PausedRun",
    "PostgresEventLog",
    "RedisEventLog",
    "SegmentAttempts",
    "SegmentClaim",
    "SegmentOutcome",
    "SegmentRequest",
    "SegmentSteps",
    "StepMode",
    "StepTable",
    "body_of",
    "delta_text",
    "error_json",
    "event_log_at",
    "json_text",
    "jsonable",
    "message_json",
    "publish_end",
    "replay_json",
    "request_digest",
    "run_segment",
    "segment_id",
    "watch_cancels",
]

_DBOS_NAMES = ("APP_VERSION", "CodecSerializer", "DBOSBackend", "DBOSWorker")
_STEP_NAMES = ("SegmentSteps", "StepMode", "StepTable")
_ATTEMPT_NAMES = ("FailedSegment", "SegmentAttempts")


def __getattr__(name: str) -> Any:
    if name in _DBOS_NAMES:  # imported on first use: DBOS is an extra, and its import takes a second
        from . import _dbos

        return getattr(_dbos, name)
    if name in _STEP_NAMES:  # imported on first use: psycopg is an extra
        from . import _steps

        return getattr(_steps, name)
    if name in _ATTEMPT_NAMES:  # imported on first use: psycopg is an extra
        from . import _attempts

        return getattr(_attempts, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
