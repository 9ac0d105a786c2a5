"""AI flows: solon-ai-flow's components on the graph engine, for flows written in YAML.

``AiFlowEngine()`` is a ``FlowEngine`` that knows the twelve components by their Solon names (``@VarInput``,
``@VarCopy``, ``@ConsoleInput``, ``@WebInput``, ``@ChatModel``, ``@EmbeddingModel``, ``@GenerateModel``,
``@InMemoryRepository``, ``@RedisRepository``, ``@VarOutput``, ``@ConsoleOutput``, ``@WebOutput``), with their
metas and I/O conventions; ``batonflow run`` uses it. Models and tool providers registered on it by name
(``engine.register("chat", model)``) are what ``chatConfig: {model: chat}`` and ``toolProviders: [name]`` find.
A flow file reaches no command, file or host unless the engine's owner allowed it (``allowed_commands``,
``base_dir``, ``allowed_hosts``); a refusal is a ``FlowPermissionError``.
"""

from ._allow import DEFAULT_HTTP_TIMEOUT as DEFAULT_HTTP_TIMEOUT
from ._allow import DEFAULT_MAX_FETCH_BYTES as DEFAULT_MAX_FETCH_BYTES
from ._allow import TEXT_TYPES as TEXT_TYPES
from ._base import FLOW_NODE_END as FLOW_NODE_END
from ._base import FLOW_NODE_START as FLOW_NODE_START
from ._base import AiComponent as AiComponent
from ._base import FlowSettings as FlowSettings
from ._base import NodeEvent as NodeEvent
from ._chat import MAX_TOOL_ROUNDS as MAX_TOOL_ROUNDS
from ._chat import ChatSession as ChatSession
from ._config import PROVIDERS as PROVIDERS
from ._documents import Document as Document
from ._documents import DocumentSplitter as DocumentSplitter
from ._documents import RegexTextSplitter as RegexTextSplitter
from ._documents import SplitterPipeline as SplitterPipeline
from ._documents import TokenSizeTextSplitter as TokenSizeTextSplitter
from ._engine import COMPONENTS as COMPONENTS
from ._engine import AiFlowEngine as AiFlowEngine
from ._errors import FlowComponentError as FlowComponentError
from ._errors import FlowMetaError as FlowMetaError
from ._errors import FlowPermissionError as FlowPermissionError
from ._generate import GeneratedImage as GeneratedImage
from ._generate import ImageModel as ImageModel
from ._generate import OpenAIImageModel as OpenAIImageModel
from ._io import output_text as output_text
from ._repository import DEFAULT_LIMIT as DEFAULT_LIMIT
from ._repository import DEFAULT_SIMILARITY_THRESHOLD as DEFAULT_SIMILARITY_THRESHOLD
from ._repository import InMemoryRepository as InMemoryRepository
from ._repository import RedisRepository as RedisRepository
from ._repository import Repository as Repository
from ._repository import augment as augment
from ._repository import cosine_similarity as cosine_similarity
from ._web import WebExchange as WebExchange
from ._web import current_exchange as current_exchange
from ._web import serving as serving

__all__ = [
    "COMPONENTS",
    "DEFAULT_HTTP_TIMEOUT",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_FETCH_BYTES",
    "DEFAULT_SIMILARITY_THRESHOLD",
    "FLOW_NODE_END",
    "FLOW_NODE_START",
    "MAX_TOOL_ROUNDS",
    "PROVIDERS",
    "TEXT_TYPES",
    "AiComponent",
    "AiFlowEngine",
    "ChatSession",
    "Document",
    "DocumentSplitter",
    "FlowComponentError",
    "FlowMetaError",
    "FlowPermissionError",
    "FlowSettings",
    "GeneratedImage",
    "ImageModel",
    "InMemoryRepository",
    "NodeEvent",
    "OpenAIImageModel",
    "RedisRepository",
    "RegexTextSplitter",
    "Repository",
    "SplitterPipeline",
    "TokenSizeTextSplitter",
    "WebExchange",
    "augment",
    "cosine_similarity",
    "current_exchange",
    "output_text",
    "serving",
]
