"""batonflow over HTTP: ``create_app(agents=...)`` makes a FastAPI app that lists the agents, runs them (a JSON
result, or an SSE stream of their events that a client can reconnect to), resumes their checkpoints, keeps their
conversations, and serves each agent as an OpenAI-compatible model. Needs the ``server`` extra.
"""

from ._app import create_app as create_app
from ._server import ServerLimits as ServerLimits

__all__ = ["ServerLimits", "create_app"]
