"""What the wheel ships besides the code: the typing marker and a licence that agrees with pyproject.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

import batonflow

ROOT = Path(__file__).resolve().parent.parent


def test_the_package_is_marked_as_typed() -> None:
    # Hatch's wheel takes every file of src/batonflow, so the marker beside __init__.py is in the wheel.
    assert (Path(batonflow.__file__).parent / "py.typed").is_file()


def test_the_license_file_is_the_license_pyproject_names() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
