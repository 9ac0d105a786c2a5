"""The tools of an MCP server as batonflow ``Tool``s, on the official ``mcp`` SDK (``pip install "batonflow[mcp]"``).

``MCPToolProvider.stdio(command, args)`` starts a server as a child process and talks to it over its stdin and
stdout; ``MCPToolProvider.http(url)`` reaches one over streamable HTTP. ``await provider.tools()`` connects on
first use and lists the server's tools; each one is a ``Tool`` that any agent can be given, and calls the server.

The connection lives in a task of its own for as long as the provider is open: the SDK's client is made of
anyio task groups, which must be left by the task that entered them, while calls come from whichever task runs
an agent. Every wait on the server is bounded by ``timeout``: a server that does not start, stops answering or
dies mid-call raises ``MCPServerError`` (a ``RunError`` naming the server) instead of hanging the run; the next
use starts the connection again.

What a call returns to the model: the text of the result's text contents, joined by blank lines (an embedded
text resource counts as text; an image, audio or binary resource is named, as ``[image: image/png]``); when
there is no text, the structured content as JSON. A result the server marks ``isError`` is returned too, as
``Error: <its text>`` (as Solon-AI's MCP client marks it: once, if the text does not start so): the model reads it and can try again, as with any tool observation. A JSON-RPC error
answer (an unknown tool, arguments the server refuses) is read the same way, since the server is alive.

The SDK is imported when a provider first connects: this module, and ``MCPServerError``, import without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, TextIO, cast

from ..errors import RunError, ToolArgumentsError, UserError
from ..schema import ToolInfo
from ._context import ToolContext
from ._json import parse_model_json
from ._protocols import Tool
from .feedback import describe_json_value

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult

__all__ = ["MCPServerError", "MCPTool", "MCPToolProvider"]

_INSTALL_HINT = "pip install 'batonflow[mcp]'"
_NAME = re.compile(r"[^a-zA-Z0-9_-]")


class MCPServerError(RunError):
    """An MCP server could not be used: it did not start, could not be reached, stopped answering within the
    timeout, died, or answered outside the protocol. ``server`` names it (the command or the URL)."""

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


@dataclass(frozen=True, slots=True)
class _Connection:
    """What a provider connects with: a name for messages, and how to make the SDK client (with its own
    resources, entered on the connection's exit stack)."""

    server: str
    make_client: Callable[[contextlib.AsyncExitStack, IO[str] | None], Any]
    errlog: bool


class MCPToolProvider:
    """The tools of one MCP server. Make one with ``MCPToolProvider.stdio`` or ``MCPToolProvider.http``; use it
    as ``async with`` or ``await close()`` when done (a stdio server is stopped then).

    ``timeout`` bounds each wait on the server, in seconds: the start and handshake, listing the tools, and each
    tool call.
    """

    def __init__(self, connection: _Connection, *, timeout: float) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise UserError(f"MCPToolProvider timeout: expected a number of seconds above 0, got {timeout!r}")
        self._connection = connection
        self.timeout = float(timeout)
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stops: dict[asyncio.Task[None], asyncio.Event] = {}
        self._errlog: IO[str] | None = None
        self._lock = asyncio.Lock()
        self._tools: list[Tool] | None = None
        self._retiring: set[asyncio.Task[None]] = set()

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float = 30.0,
    ) -> MCPToolProvider:
        """A server run as ``command args…``, spoken to over its stdin and stdout. ``env`` is added to the SDK's
        default environment for servers (``PATH``, ``HOME``…; not all of this process's variables).

        What the server writes to its stderr is kept, and its last lines are quoted when it fails.
        """
        if not isinstance(command, str) or not command:
            raise UserError(f"MCPToolProvider.stdio: expected a command (a non-empty str), got {command!r}")
        if isinstance(args, str) or not all(isinstance(arg, str) for arg in args):
            raise UserError(f"MCPToolProvider.stdio: expected args as a sequence of str, got {args!r}")
        arguments, environment = list(args), dict(env) if env is not None else None

        def make_client(stack: contextlib.AsyncExitStack, errlog: IO[str] | None) -> Any:
            from mcp import Client, StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(command=command, args=arguments, env=environment, cwd=cwd)
            transport = stdio_client(params, errlog=cast(TextIO, errlog) if errlog is not None else sys.stderr)
            return Client(transport, read_timeout_seconds=timeout)

        server = " ".join([command, *arguments])
        return cls(_Connection(server=server, make_client=make_client, errlog=True), timeout=timeout)

    @classmethod
    def http(cls, url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 30.0) -> MCPToolProvider:
        """A server at ``url`` over streamable HTTP (``http://127.0.0.1:8000/mcp``); ``headers`` go with every
        request (``Authorization``, say)."""
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise UserError(f"MCPToolProvider.http: expected an http(s) URL, got {url!r}")
        sent = dict(headers or {})

        def make_client(stack: contextlib.AsyncExitStack, errlog: IO[str] | None) -> Any:
            import httpx2
            from mcp import Client
            from mcp.client.streamable_http import streamable_http_client

            # Reads wait longer than a call may: the server's event stream stays open while idle, and every call is
            # bounded by the provider's own timeout.
            http_client = httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(timeout, read=max(300.0, timeout)))
            stack.push_async_callback(http_client.aclose)
            return Client(streamable_http_client(url, http_client=http_client), read_timeout_seconds=timeout)

        return cls(_Connection(server=url, make_client=make_client, errlog=False), timeout=timeout)

    @property
    def server(self) -> str:
        """The server, as messages name it: the command line or the URL."""
        return self._connection.server

    def __repr__(self) -> str:
        return f"MCPToolProvider({self.server!r})"

    async def __aenter__(self) -> MCPToolProvider:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def tools(self) -> list[Tool]:
        """The server's tools, listed once (connecting first if need be). A name that a model would not accept
        (``a.b``) is given with its other characters as ``_``; the server is called with its own name."""
        if self._tools is None:
            listed = await self._request("list its tools", self._list_tools)
            tools: list[Tool] = []
            names: dict[str, str] = {}
            for spec in listed:
                tool = MCPTool(self, spec)
                if tool.info.name in names:
                    raise MCPServerError(
                        f"MCP server {self.server!r}: expected tool names that differ once made model-safe, got "
                        f"{names[tool.info.name]!r} and {spec.name!r} both as {tool.info.name!r}",
                        server=self.server,
                    )
                names[tool.info.name] = spec.name
                tools.append(tool)
            self._tools = tools
        return list(self._tools)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Call the server's tool ``name`` with ``arguments``; the text a model reads (see the module's notes)."""
        from mcp import MCPError

        async def call(client: Client) -> CallToolResult:
            return await client.call_tool(name, dict(arguments), read_timeout_seconds=self.timeout)

        try:
            result = await self._request(f"call the tool {name!r}", call)
        except MCPError as error:  # the server's own answer: the model reads it
            return f"Error: {error.message}"
        return _result_text(result)

    async def close(self) -> None:
        """Close the connection (stopping a stdio server). The provider connects again if used after."""
        async with self._lock:
            await self._disconnect()

    # -- the connection ------------------------------------------------------------------------------------------

    async def _request(self, what: str, send: Callable[[Client], Any]) -> Any:
        """``send(client)`` on a live connection, within the timeout, failing as ``MCPServerError`` if the
        connection ends first (the server died) or nothing comes back in time."""
        client, owner = await self._connect()
        request = asyncio.ensure_future(send(client))
        try:
            done, _ = await asyncio.wait({request, owner}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            request.cancel()
            raise
        if request in done:
            try:
                return request.result()
            except (RunError, UserError):
                raise
            except Exception as error:
                if _is_protocol_answer(error):
                    raise
                await self._drop()
                if _is_timeout(error):
                    raise self._no_answer(what) from error
                raise self._failure(what, error) from error
        request.cancel()
        with contextlib.suppress(BaseException):
            await request
        if owner in done:
            cause = owner.exception() if not owner.cancelled() else None
            await self._drop()
            raise self._failure(what, cause) from cause
        await self._drop()
        raise self._no_answer(what)

    async def _connect(self) -> tuple[Client, asyncio.Task[None]]:
        async with self._lock:
            if self._client is not None and self._owner is not None and not self._owner.done():
                return self._client, self._owner
            await self._disconnect(wait=False)
            try:
                import mcp  # noqa: F401  # the SDK is an optional extra
            except ImportError as exc:
                raise UserError(
                    f"MCP tool providers need the mcp SDK, which is not installed; run {_INSTALL_HINT}"
                ) from exc
            if self._connection.errlog:
                self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[Client] = loop.create_future()
            stop = asyncio.Event()
            owner = asyncio.create_task(self._hold(ready, stop), name=f"mcp:{self.server}")
            self._stops[owner] = stop
            try:
                client = await asyncio.wait_for(asyncio.shield(ready), timeout=self.timeout)
            except TimeoutError:
                tail = self._stderr_tail()
                ready.cancel()
                self._retire(owner)
                raise MCPServerError(
                    f"MCP server {self.server!r} did not start within {self.timeout:g} s{tail}", server=self.server
                ) from None
            except BaseException as error:
                tail = self._stderr_tail()
                ready.cancel()
                self._retire(owner)
                if isinstance(error, Exception):
                    raise MCPServerError(
                        f"MCP server {self.server!r} could not be started or reached: {_describe(error)}{tail}",
                        server=self.server,
                    ) from error
                raise
            self._client, self._owner = client, owner
            return client, owner

    async def _hold(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """The connection's task: enters the SDK client, hands it out, and leaves it when told to stop (or when
        the connection breaks, which ends this task with the error)."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = self._connection.make_client(stack, self._errlog)
                await stack.enter_async_context(client)
                if not ready.done():
                    ready.set_result(client)
                await stop.wait()
        except BaseException as error:
            if not ready.done():
                ready.set_exception(error if isinstance(error, Exception) else RuntimeError("connection cancelled"))
                return
            raise

    async def _drop(self) -> None:
        """Let go of a connection that failed: its task ends in the background, so that the failure is raised now
        (the SDK gives a stdio server two seconds to exit before it terminates it)."""
        async with self._lock:
            owner, self._owner, self._client = self._owner, None, None
            if owner is not None:
                self._retire(owner)

    def _retire(self, owner: asyncio.Task[None]) -> None:
        ending = asyncio.create_task(self._end(owner, grace=0.0))
        self._retiring.add(ending)
        ending.add_done_callback(self._retiring.discard)

    async def _disconnect(self, *, wait: bool = True) -> None:
        """End the connection's task, if any, and (``wait``) the failed ones; call with ``self._lock`` held."""
        owner, self._owner, self._client = self._owner, None, None
        if owner is not None:
            await self._end(owner)
        if wait and self._retiring:
            await asyncio.gather(*self._retiring, return_exceptions=True)
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    async def _end(self, owner: asyncio.Task[None], *, grace: float | None = None) -> None:
        """Stop the connection's task: a clean exit first, for ``grace`` seconds (the timeout by default), then a
        cancellation. A clean exit stops a stdio server (the SDK closes its stdin, then terminates it)."""
        stop = self._stops.pop(owner, None)
        if stop is not None:
            stop.set()
        if grace != 0.0:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(owner), timeout=self.timeout if grace is None else grace)
        if not owner.done():
            owner.cancel()
        with contextlib.suppress(BaseException):
            await owner

    def _no_answer(self, what: str) -> MCPServerError:
        return MCPServerError(
            f"MCP server {self.server!r} did not answer within {self.timeout:g} s when asked to {what}"
            f"{self._stderr_tail()}",
            server=self.server,
        )

    def _failure(self, what: str, cause: BaseException | None) -> MCPServerError:
        reason = f": {_describe(cause)}" if cause is not None else ""
        return MCPServerError(
            f"MCP server {self.server!r} failed when asked to {what} (the connection ended{reason}){self._stderr_tail()}",
            server=self.server,
        )

    def _stderr_tail(self, size: int = 600) -> str:
        log = self._errlog
        if log is None or log.closed:
            return ""
        try:
            log.flush()
            log.seek(0)
            text = log.read()[-size:].strip()
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends: {' '.join(text.split())}" if text else ""

    async def _list_tools(self, client: Client) -> list[Any]:
        specs: list[Any] = []
        cursor: str | None = None
        for _ in range(100):  # a server whose pages never end cannot hang the listing
            page = await client.list_tools(cursor=cursor)
            specs.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return specs


class MCPTool:
    """One tool of an MCP server: its ``info`` comes from the server's listing, ``invoke`` calls the server."""

    def __init__(self, provider: MCPToolProvider, spec: Any) -> None:
        self.provider = provider
        self.server_name: str = spec.name
        parameters = dict(spec.input_schema or {})
        parameters.setdefault("type", "object")
        parameters.setdefault("properties", {})
        try:
            self.info = ToolInfo(
                name=_NAME.sub("_", spec.name)[:64] or "tool",
                description=spec.description or spec.title or "",
                parameters=parameters,
            )
        except UserError as error:
            raise MCPServerError(
                f"MCP server {provider.server!r} lists the tool {spec.name!r}: {error}", server=provider.server
            ) from None

    def __repr__(self) -> str:
        return f"MCPTool({self.server_name!r}, server={self.provider.server!r})"

    async def invoke(self, arguments: str, ctx: ToolContext | None = None) -> str:
        try:
            value = parse_model_json(arguments) if arguments.strip() else {}
        except ValueError as error:
            raise ToolArgumentsError(
                f"Invalid arguments for tool [{self.info.name}]: {error}", tool_name=self.info.name
            ) from None
        if not isinstance(value, dict):
            raise ToolArgumentsError(
                f"Invalid arguments for tool [{self.info.name}]: expected a JSON object, got {describe_json_value(value)}",
                tool_name=self.info.name,
            )
        return await self.provider.call(self.server_name, value)


def _result_text(result: CallToolResult) -> str:
    from mcp.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent

    parts: list[str] = []
    for content in result.content:
        if isinstance(content, TextContent):
            parts.append(content.text)
        elif isinstance(content, ImageContent | AudioContent):
            parts.append(f"[{content.type}: {content.mime_type}]")
        elif isinstance(content, EmbeddedResource):
            text = getattr(content.resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource: {content.resource.uri}]")
        elif isinstance(content, ResourceLink):
            parts.append(f"[resource: {content.uri}]")
    text = "\n\n".join(parts)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return f"Error: {text}" if result.is_error and not text.startswith("Error: ") else text


def _is_protocol_answer(error: BaseException) -> bool:
    """An error the server sent as its answer (the server is alive), not one of the connection."""
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    return isinstance(error, MCPError) and error.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT)


def _is_timeout(error: BaseException) -> bool:
    from mcp import MCPError
    from mcp_types import REQUEST_TIMEOUT

    return isinstance(error, TimeoutError) or (isinstance(error, MCPError) and error.code == REQUEST_TIMEOUT)


def _describe(error: BaseException) -> str:
    """An error in a few words, reaching into exception groups (anyio's task groups wrap what failed)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
