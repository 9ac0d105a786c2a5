"""What a graph or flow file may reach: the commands, files and hosts its nodes name, checked against what the
engine's owner allowed in code; and fetches bounded in size, time and type.

A flow file is shared, downloaded and served, so nothing it names is taken on trust. A stdio MCP server's command
must be in ``allowed_commands``; a file must resolve (``..``, ``~``, absolute paths, ``file:`` URLs and symlinks
followed) inside ``base_dir``; a host must be in ``allowed_hosts``. Every refusal is a ``FlowPermissionError``
naming the node, the meta and the rule. Hosts are compared as the connecting client sees them: a URL is parsed by
httpx (the openai SDK and the MCP client use its parser), and a name that is not listed by name is resolved, so that
``127.1``, ``0x7f.0.0.1`` or ``2130706433`` are the address they connect to.
"""

from __future__ import annotations

import asyncio
import codecs
import ipaddress
import os
import re
import socket
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from ..errors import UserError
from ..graph import Node
from ._errors import FlowComponentError, FlowMetaError, FlowPermissionError

if TYPE_CHECKING:
    from ._base import FlowSettings

__all__ = [
    "DEFAULT_HTTP_TIMEOUT",
    "DEFAULT_MAX_FETCH_BYTES",
    "REFUSED_ENV",
    "TEXT_TYPES",
    "HostRule",
    "check_address",
    "check_command",
    "check_url",
    "command_entries",
    "fetch_text",
    "host_entries",
    "host_rules",
    "read_text_file",
    "resolve_file",
    "resolve_folder_files",
]

DEFAULT_MAX_FETCH_BYTES = 10 * 1024 * 1024
"""The most bytes one fetch or one file read may bring (10 MiB): ``AiFlowEngine(max_fetch_bytes=...)``."""
DEFAULT_HTTP_TIMEOUT = 30.0
"""The seconds a whole fetch may take, from connecting to the last byte: ``AiFlowEngine(http_timeout=...)``."""

TEXT_TYPES = (
    "text/*",
    "application/json",
    "application/*+json",
    "application/xml",
    "application/*+xml",
    "application/yaml",
    "application/x-yaml",
    "application/x-ndjson",
)
"""The content types a fetched document may have; any other (or none) is refused."""

REFUSED_ENV = ("PATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "GCONV_PATH")
_REFUSED_ENV_PREFIXES = ("LD_", "DYLD_", "PYTHON", "NODE_", "PERL", "RUBY", "BASH_FUNC_", "JAVA_TOOL", "_JAVA")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFAULT_PORTS = {"http": 80, "https": 443}

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _where(node: Node, meta: str) -> dict[str, str]:
    return {"graph_id": node.graph.id, "node_id": node.id, "meta": meta}


# -- hosts -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HostRule:
    """One ``allowed_hosts`` entry: a DNS ``name`` or an IP ``network`` (an address is a network of one), with
    a ``port`` when the entry names one (``None``: any port)."""

    entry: str
    name: str = ""
    network: IPNetwork | None = None
    port: int | None = None

    def allows_name(self, name: str, port: int) -> bool:
        return bool(self.name) and self.name == name and self.port in (None, port)

    def allows_address(self, address: IPAddress, port: int) -> bool:
        return (
            self.network is not None
            and address.version == self.network.version
            and address in self.network
            and self.port in (None, port)
        )


def _unmapped(address: IPAddress) -> IPAddress:
    """``::ffff:127.0.0.1`` is ``127.0.0.1``: a v4-mapped address connects to the v4 one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _address(text: str) -> IPAddress | None:
    try:
        return _unmapped(ipaddress.ip_address(text.strip("[]").split("%")[0]))
    except ValueError:
        return None


def _name(host: str) -> str:
    return host.strip().lower().rstrip(".")


def host_rules(entries: Iterable[str]) -> tuple[HostRule, ...]:
    """``allowed_hosts`` read: ``name``, ``name:port``, an IP (``127.0.0.1``, ``::1``, ``[::1]:8080``) or a CIDR
    network (``10.0.0.0/8``). Anything else is a ``UserError``."""
    import httpx

    if isinstance(entries, str):
        raise UserError(f"allowed_hosts: expected a list of hosts, got the text {entries!r}")
    rules = []
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip() or re.search(r"[\s@\\?#]", entry.strip()):
            raise UserError(f"allowed_hosts: expected 'name', 'name:port', an IP or a CIDR network, got {entry!r}")
        text = entry.strip()
        if "/" in text:
            try:
                network = ipaddress.ip_network(text, strict=False)
            except ValueError:
                raise UserError(f"allowed_hosts: expected a CIDR network such as 10.0.0.0/8, got {entry!r}") from None
            rules.append(HostRule(entry, network=ipaddress.ip_network(_network_unmapped(network))))
            continue
        bare = _address(text) if text.count(":") != 1 or (text.startswith("[") and text.endswith("]")) else None
        if bare is not None:
            rules.append(HostRule(entry, network=ipaddress.ip_network(bare)))
            continue
        try:
            # A scheme without a default port, so that 'name:80' keeps its port.
            url = httpx.URL(f"batonflow-host://{text}/")
        except (httpx.InvalidURL, ValueError):
            raise UserError(
                f"allowed_hosts: expected 'name', 'name:port', an IP or a CIDR network, got {entry!r}"
            ) from None
        address = _address(url.host)
        if address is not None:
            rules.append(HostRule(entry, network=ipaddress.ip_network(address), port=url.port))
        elif url.host:
            rules.append(HostRule(entry, name=_name(url.host), port=url.port))
        else:
            raise UserError(f"allowed_hosts: expected 'name', 'name:port', an IP or a CIDR network, got {entry!r}")
    return tuple(rules)


def host_entries(entries: Iterable[str]) -> frozenset[str]:
    """``allowed_hosts`` checked (see ``host_rules``), as a set of its entries."""
    entries = list(entries) if not isinstance(entries, str) else entries
    host_rules(entries)
    return frozenset(entry.strip() for entry in entries)


def _network_unmapped(network: IPNetwork) -> str:
    if isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= 96:
        mapped = network.network_address.ipv4_mapped
        if mapped is not None:
            return f"{mapped}/{network.prefixlen - 96}"
    return str(network)


def _allowed_hosts_text(settings: FlowSettings) -> str:
    entries = [rule.entry for rule in settings.host_rules]
    return repr(entries) if entries else "none"


async def check_address(host: str, port: int, asked: str, settings: FlowSettings, node: Node, meta: str) -> None:
    """Refuse ``host``:``port`` (for ``asked``, a URL or a server as written) unless ``allowed_hosts`` lists its
    name, or every address it resolves to is inside a listed IP or network."""
    rules = settings.host_rules
    name = _name(host)
    if any(rule.allows_name(name, port) for rule in rules):
        return
    address = _address(name)
    addresses: list[IPAddress] = [] if address is None else [address]
    if address is None and any(rule.network is not None for rule in rules):
        # The name is resolved as the client will resolve it: a spelling such as 127.1 is the address it reaches.
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            infos = []
        addresses = [found for info in infos if (found := _address(str(info[4][0]))) is not None]
    if addresses and all(any(rule.allows_address(found, port) for rule in rules) for found in addresses):
        return
    shown = f"[{name}]:{port}" if ":" in name else f"{name}:{port}"
    resolved = (
        f" (it resolves to {sorted({str(found) for found in addresses})})" if address is None and addresses else ""
    )
    raise FlowPermissionError(
        f"{asked!r} connects to the host {shown}{resolved}, which is not allowed; allowed hosts: "
        f"{_allowed_hosts_text(settings)}. The engine's owner allows it in code with "
        f"AiFlowEngine(allowed_hosts=[{shown!r}]) (batonflow run --allow-host {shown})",
        rule="allowed_hosts",
        **_where(node, meta),
    )


async def check_url(url: str, settings: FlowSettings, node: Node, meta: str) -> None:
    """Refuse ``url`` unless it is http(s) on an allowed host (parsed as httpx parses it)."""
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as error:
        raise FlowMetaError(f"expected an http(s) URL, got {url!r} ({error})", **_where(node, meta)) from None
    if parsed.scheme not in _DEFAULT_PORTS or not parsed.host:
        raise FlowMetaError(f"expected an http(s) URL with a host, got {url!r}", **_where(node, meta))
    await check_address(parsed.host, parsed.port or _DEFAULT_PORTS[parsed.scheme], url, settings, node, meta)


# -- commands ----------------------------------------------------------------------------------------------------


def command_entries(entries: Iterable[str]) -> frozenset[str]:
    """``allowed_commands`` read: bare names (``uvx``) or absolute paths (``/usr/bin/python3``)."""
    if isinstance(entries, str):
        raise UserError(f"allowed_commands: expected a list of commands, got the text {entries!r}")
    found = set()
    for entry in entries:
        if not isinstance(entry, str) or not entry or "\0" in entry or ("/" in entry and not os.path.isabs(entry)):
            raise UserError(f"allowed_commands: expected a bare name (uvx) or an absolute path, got {entry!r}")
        found.add(entry)
    return frozenset(found)


def check_command(
    server: str, config: Mapping[str, Any], settings: FlowSettings, node: Node, meta: str
) -> dict[str, Any]:
    """The stdio server's ``command``, ``env`` and ``cwd`` as they may run, or a ``FlowPermissionError``.

    A bare name runs when that name is allowed (it is found on the SDK's ``PATH``, which the file cannot set). A
    command with a ``/`` runs when it resolves (from ``cwd``, symlinks followed) to the same file as an allowed
    absolute path: ``./sh`` or ``/bin/../bin/sh`` are what they resolve to, never a name."""
    command: str = config["command"]
    where = _where(node, meta)
    cwd = config.get("cwd")
    if cwd is not None:
        if not isinstance(cwd, str):
            raise FlowMetaError(f"server {server!r}: expected 'cwd' as text, got {cwd!r}", **where)
        folder = resolve_file(cwd, settings, node, meta, what=f"server {server!r}: the cwd")
        if not folder.is_dir():
            raise FlowMetaError(f"server {server!r}: expected 'cwd' to be a folder, got {cwd!r}", **where)
        cwd = str(folder)
    elif settings.base_dir is not None:
        cwd = str(settings.base_dir)  # a script named relative to the flow file is found
    allowed = settings.allowed_commands
    if "/" not in command:
        ok = command in allowed
    else:
        start = cwd if cwd is not None else os.getcwd()
        resolved = os.path.realpath(os.path.join(start, command))
        ok = any(os.path.isabs(entry) and os.path.realpath(entry) == resolved for entry in allowed)
    if not ok:
        shown = sorted(allowed) or "none"
        raise FlowPermissionError(
            f"server {server!r} would run the command {command!r}, which is not allowed; allowed commands: {shown}. "
            f"The engine's owner allows it in code with AiFlowEngine(allowed_commands=[{command!r}]) (batonflow run "
            f"--allow-command {command}); a command with a '/' must resolve to an allowed absolute path",
            rule="allowed_commands",
            **where,
        )
    options: dict[str, Any] = {"command": command, "cwd": cwd}
    env = config.get("env")
    if env is not None:
        options["env"] = _env(server, env, node, meta)
    return options


def _env(server: str, env: Any, node: Node, meta: str) -> dict[str, str]:
    where = _where(node, meta)
    if not isinstance(env, Mapping):
        raise FlowMetaError(f"server {server!r}: expected 'env' as a mapping of names to text, got {env!r}", **where)
    checked: dict[str, str] = {}
    for key, value in env.items():
        if not isinstance(key, str) or not _ENV_NAME.fullmatch(key) or not isinstance(value, str | int | float):
            raise FlowMetaError(
                f"server {server!r}: expected 'env' as a mapping of names to text, got {key!r}: {value!r}", **where
            )
        if key.upper() in REFUSED_ENV or key.upper().startswith(_REFUSED_ENV_PREFIXES):
            raise FlowPermissionError(
                f"server {server!r}: the variable {key!r} of 'env' would change which code the command runs; a file "
                "may not set it (the owner sets it in the process's environment or opens the server in code with "
                "MCPToolProvider.stdio)",
                rule="allowed_commands",
                **where,
            )
        checked[key] = str(value)
    return checked


# -- files -------------------------------------------------------------------------------------------------------


def _refuse_file(asked: str, why: str, settings: FlowSettings, node: Node, meta: str) -> FlowPermissionError:
    base = "none: no file may be read" if settings.base_dir is None else repr(str(settings.base_dir))
    return FlowPermissionError(
        f"{asked} {why}; base_dir: {base}. The engine's owner allows files in a folder in code with "
        "AiFlowEngine(base_dir=...) (batonflow run --base-dir DIR)",
        rule="base_dir",
        **_where(node, meta),
    )


def resolve_file(name: str, settings: FlowSettings, node: Node, meta: str, *, what: str = "") -> Path:
    """The path ``name`` (relative to ``base_dir``, ``~``, absolute or a ``file:`` URL) resolves to, symlinks
    followed, if it is inside ``base_dir``; else a ``FlowPermissionError``."""
    asked = f"{what} {name!r}".strip() if what else repr(name)
    base = settings.base_dir
    if base is None:
        raise _refuse_file(asked, "names a file", settings, node, meta)
    text = name
    if text.lower().startswith("file:"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise _refuse_file(asked, f"names a file on the host {parts.netloc!r}", settings, node, meta)
        text = unquote(parts.path)
    try:
        resolved = (base / Path(text).expanduser()).resolve()
    except (OSError, RuntimeError, ValueError) as error:
        raise _refuse_file(asked, f"cannot be resolved ({error})", settings, node, meta) from None
    if not resolved.is_relative_to(base):
        raise _refuse_file(asked, f"resolves to {str(resolved)!r}, outside base_dir", settings, node, meta)
    return resolved


def resolve_folder_files(
    folder: Path, suffixes: frozenset[str], settings: FlowSettings, node: Node, meta: str
) -> list[Path]:
    """The files with ``suffixes`` under ``folder`` (resolved, inside ``base_dir``), sorted. A symlink that points
    outside ``base_dir`` is refused; one to a folder inside is not followed."""
    base = settings.base_dir
    assert base is not None  # folder came from resolve_file
    files: list[Path] = []
    for root, folders, names in os.walk(folder, followlinks=False):
        for entry in [*folders, *names]:
            path = Path(root) / entry
            resolved = path.resolve()
            if path.is_symlink() and not resolved.is_relative_to(base):
                raise _refuse_file(
                    f"the link {str(path)!r}", f"points to {str(resolved)!r}, outside base_dir", settings, node, meta
                )
            if entry in names and path.suffix.lower() in suffixes and resolved.is_file():
                files.append(resolved)
    return sorted(files)


def _too_big(asked: str, settings: FlowSettings, node: Node, meta: str) -> FlowPermissionError:
    return FlowPermissionError(
        f"{asked} is larger than max_fetch_bytes ({settings.max_fetch_bytes} bytes); the engine's owner allows more "
        "in code with AiFlowEngine(max_fetch_bytes=...)",
        rule="max_fetch_bytes",
        **_where(node, meta),
    )


def read_text_file(path: Path, settings: FlowSettings, node: Node, meta: str) -> str:
    """A regular file's text (UTF-8), at most ``max_fetch_bytes``; ``path`` is resolved (no link is followed)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise FlowMetaError(f"expected a regular file, got {str(path)!r}", **_where(node, meta))
            data = file.read(settings.max_fetch_bytes + 1)
    except OSError as error:
        raise FlowComponentError(f"cannot read {path}: {error}", **_where(node, meta)) from error
    if len(data) > settings.max_fetch_bytes:
        raise _too_big(f"the file {str(path)!r}", settings, node, meta)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FlowComponentError(f"cannot read {path}: {error}", **_where(node, meta)) from error


# -- fetches -----------------------------------------------------------------------------------------------------


def _text_like(content_type: str) -> bool:
    kind = content_type.split(";")[0].strip().lower()
    major, _, minor = kind.partition("/")
    for allowed in TEXT_TYPES:
        a_major, _, a_minor = allowed.partition("/")
        if major != a_major:
            continue
        if a_minor == "*" or a_minor == minor or (a_minor.startswith("*+") and minor.endswith(a_minor[1:])):
            return True
    return False


async def fetch_text(url: str, settings: FlowSettings, node: Node, meta: str) -> str:
    """The text at ``url``: the host, and that of every redirect, allowed; a text-like content type; at most
    ``max_fetch_bytes``, read as it streams in; all of it within ``http_timeout`` seconds."""
    import httpx

    where = _where(node, meta)
    await check_url(url, settings, node, meta)

    async def check_redirect(request: httpx.Request) -> None:
        await check_url(str(request.url), settings, node, meta)

    body = bytearray()
    try:
        # One deadline for the whole fetch: httpx's own timeouts are per read, which a server sending a byte a
        # second never trips.
        async with (
            asyncio.timeout(settings.http_timeout),
            httpx.AsyncClient(
                timeout=settings.http_timeout,
                follow_redirects=True,
                event_hooks={"request": [check_redirect]},
                # Asked plain so that what is counted is what is kept: a compressed body could expand past the
                # limit within one chunk.
                headers={"Accept-Encoding": "identity"},
            ) as client,
            client.stream("GET", url) as response,
        ):
            response.raise_for_status()
            _check_response(url, response.headers, settings, node, meta)
            async for chunk in response.aiter_raw():
                body.extend(chunk)
                if len(body) > settings.max_fetch_bytes:
                    raise _too_big(f"the body of {url!r}", settings, node, meta)
            charset = response.charset_encoding
    except TimeoutError:
        raise FlowPermissionError(
            f"fetching {url!r} took longer than http_timeout ({settings.http_timeout} s, the whole fetch); the "
            "engine's owner allows longer in code with AiFlowEngine(http_timeout=...)",
            rule="http_timeout",
            **where,
        ) from None
    except httpx.HTTPError as error:
        raise FlowComponentError(f"cannot fetch {url!r}: {type(error).__name__}: {error}", **where) from error
    try:
        codec = codecs.lookup(charset or "utf-8").name
    except LookupError:
        codec = "utf-8"
    return bytes(body).decode(codec, errors="replace")


def _check_response(url: str, headers: Any, settings: FlowSettings, node: Node, meta: str) -> None:
    content_type = headers.get("content-type", "")
    encoding = headers.get("content-encoding", "identity").strip().lower()
    if not _text_like(content_type) or encoding not in ("", "identity"):
        found = f"{content_type or 'no content type'}" + (
            f", encoded {encoding}" if encoding not in ("", "identity") else ""
        )
        raise FlowPermissionError(
            f"{url!r} answered {found}: expected an uncompressed text-like body ({', '.join(TEXT_TYPES)})",
            rule="content_type",
            **_where(node, meta),
        )
    length = headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > settings.max_fetch_bytes:
        raise _too_big(f"the body of {url!r} ({length} bytes)", settings, node, meta)
