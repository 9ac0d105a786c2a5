"""The ``batonflow`` command: thin over the library, it parses arguments, calls, and prints (typer and rich, the
``cli`` extra; ``serve`` needs the ``server`` extra too)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ..errors import BatonflowError

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer app, imported on first use: the command's own dependencies are an extra
        from ._commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (``sys.argv[1:]`` when None); the exit code."""
    try:
        import typer

        from ._commands import app
    except ImportError as error:
        print(f"batonflow: the command needs the cli extra ({error}): pip install 'batonflow[cli]'", file=sys.stderr)
        return 1
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
    except BatonflowError as error:
        print(f"batonflow: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nbatonflow: interrupted", file=sys.stderr)
        return 130
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
