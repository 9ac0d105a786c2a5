"""``AiFlowEngine``: a ``FlowEngine`` that knows solon-ai-flow's twelve components by their names.

The graph layer knows nothing of AI components (it sits below this one); this engine registers them on itself,
each with settings of its own engine, so that two engines share no cached model, repository or console. A user
component, a chat model, an embedding model or a tool provider is added with ``register`` as on any engine.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TextIO

from ..graph import DEFAULT_MAX_VISITS, FlowEngine
from ._allow import DEFAULT_HTTP_TIMEOUT, DEFAULT_MAX_FETCH_BYTES, command_entries, host_entries
from ._base import AiComponent, FlowSettings
from ._chat import ChatModelComponent
from ._documents import DocumentSplitter
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
    console of ``ConsoleInput``/``ConsoleOutput`` (default: the process's). What a flow file may reach is what
    the owner allows here, and by default nothing:

    - ``allowed_commands``: the commands a stdio ``mcpServers`` entry may run, as bare names (``uvx``) or absolute
      paths (default: none);
    - ``base_dir``: the folder files may be read from (documents, a local ``.gguf`` model, a server's ``cwd``),
      ``..``, ``~``, absolute paths, ``file:`` URLs and symlinks resolved first (default: none, no file);
    - ``allowed_hosts``: the hosts the components may connect to (model endpoints, MCP over HTTP, Redis, documents
      and attachments), as ``name``, ``name:port``, an IP or a CIDR network (default: none);
    - ``max_fetch_bytes`` (10 MiB) and ``http_timeout`` (30 s, for the whole fetch) bound every document or
      attachment fetched and every file read.

    A refusal is a ``FlowPermissionError``. Models, tool providers and Redis clients registered on the engine in
    code are the owner's and are not checked. A plain ``FlowEngine`` does not know the components: a graph that
    names one there is a ``ComponentError`` saying to use this engine. ``aclose()`` (or ``async with``) closes the MCP connections and Redis clients the nodes opened."""

    def __init__(
        self,
        *,
        max_visits: int = DEFAULT_MAX_VISITS,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        allowed_hosts: Iterable[str] = (),
        allowed_commands: Iterable[str] = (),
        base_dir: str | os.PathLike[str] | None = None,
        http_timeout: float = DEFAULT_HTTP_TIMEOUT,
        max_fetch_bytes: int = DEFAULT_MAX_FETCH_BYTES,
    ) -> None:
        super().__init__(max_visits=max_visits)
        self.settings = FlowSettings(
            engine=self,
            stdin=stdin,
            stdout=stdout,
            allowed_hosts=host_entries(allowed_hosts),
            allowed_commands=command_entries(allowed_commands),
            base_dir=None if base_dir is None else Path(base_dir),
            http_timeout=http_timeout,
            max_fetch_bytes=max_fetch_bytes,
        )
        # The twelve components share the settings; aclose() closes what their nodes open.
        for cls in _CLASSES:
            self.register_task(cls.name, cls(settings=self.settings))

    _EXTRA_KINDS = ("splitters",)

    @property
    def splitters(self) -> Mapping[str, object]:
        """The document splitters that ``splitPipeline`` entries name, besides the built-in ones."""
        return self._registry.view("splitters")

    def register_splitter(self, name: str, splitter: DocumentSplitter) -> None:
        self._registry.add("splitters", name, splitter)

    def _kind_of(self, component: object) -> tuple[str, ...]:
        # The graph layer does not know this layer's kinds: a splitter, and an image model.
        if callable(getattr(component, "split", None)) and not callable(getattr(component, "run", None)):
            return ("splitters",)
        if callable(getattr(component, "generate_image", None)):
            return ("models",)
        return super()._kind_of(component)
