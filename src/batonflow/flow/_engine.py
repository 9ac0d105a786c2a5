"""``AiFlowEngine``: a ``FlowEngine`` that knows solon-ai-flow's twelve components by their names.

The graph layer knows nothing of AI components (it sits below this one); this engine registers them on itself,
each with settings of its own engine, so that two engines share no cached model, repository or console. A user
component, a chat model, an embedding model or a tool provider is added with ``register`` as on any engine.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from ..graph import DEFAULT_MAX_VISITS, FlowEngine, extend_engines
from ._base import AiComponent, FlowSettings
from ._chat import ChatModelComponent
from ._generate import EmbeddingModelComponent, GenerateModelComponent
from ._io import ConsoleInput, ConsoleOutput, VarCopy, VarInput, VarOutput, WebInput, WebOutput
from ._rag import InMemoryRepositoryComponent, RedisRepositoryComponent

__all__ = ["COMPONENTS", "AiFlowEngine"]

_CLASSES: tuple[type[AiComponent], ...] = (
    VarInput,
    VarCopy,
    ConsoleInput,
    WebInput,
    ChatModelComponent,
    EmbeddingModelComponent,
    GenerateModelComponent,
    InMemoryRepositoryComponent,
    RedisRepositoryComponent,
    VarOutput,
    ConsoleOutput,
    WebOutput,
)
COMPONENTS: tuple[str, ...] = tuple(cls.name for cls in _CLASSES)
"""The names the components are registered under (``task: "@ChatModel"``)."""


class AiFlowEngine(FlowEngine):
    """A flow engine with the AI components registered on settings of its own. ``stdin``/``stdout`` are the
    console of ``ConsoleInput``/``ConsoleOutput`` (default: the process's); ``allowed_hosts`` the hosts (``name``
    or ``name:port``) documents may be fetched from (default: none); ``base_dir`` the folder relative document
    paths start in (default: the working directory). Every ``FlowEngine`` knows the components too, with the
    defaults. ``aclose()`` (or ``async with``) closes the MCP connections and Redis clients the nodes opened."""

    def __init__(
        self,
        *,
        max_visits: int = DEFAULT_MAX_VISITS,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        allowed_hosts: Iterable[str] = (),
        base_dir: str | os.PathLike[str] | None = None,
        http_timeout: float = 30.0,
    ) -> None:
        super().__init__(max_visits=max_visits)
        self.settings = FlowSettings(
            engine=self,
            stdin=stdin,
            stdout=stdout,
            allowed_hosts=frozenset(host.lower() for host in allowed_hosts),
            base_dir=None if base_dir is None else Path(base_dir),
            http_timeout=http_timeout,
        )
        _register(self, self.settings)


def _register(engine: FlowEngine, settings: FlowSettings) -> None:
    """The twelve components on ``engine``, sharing ``settings``; ``engine.aclose`` closes what their nodes open."""
    for cls in _CLASSES:
        engine.register(cls.name, cls(settings))


def _install(engine: FlowEngine) -> None:
    """Every engine knows the components, with the default settings; an ``AiFlowEngine`` registers its own."""
    if not isinstance(engine, AiFlowEngine):
        _register(engine, FlowSettings(engine=engine))


extend_engines(_install)
