"""load_model: each URI scheme builds the right model, and a bad URI says what was expected."""

from __future__ import annotations

import pytest

from batonflow.errors import UserError
from batonflow.models import OpenAIChatModel, load_model
from batonflow.models.local import LlamaCppChatModel, smollm2_model_path


def base_url(model: object) -> str:
    assert isinstance(model, OpenAIChatModel)
    return str(model._client.base_url)


def api_key(model: object) -> str:
    assert isinstance(model, OpenAIChatModel)
    return model._client.api_key


def test_openai_uri_uses_the_openai_api_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")

    model = load_model("openai:gpt-4o-mini")

    assert model.model_name == "gpt-4o-mini"
    assert base_url(model) == "https://api.openai.com/v1/"
    assert api_key(model) == "sk-env"


def test_openai_uri_without_a_key_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        load_model("openai:gpt-4o-mini")


def test_openai_compatible_uri_splits_base_url_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")

    model = load_model("openai-compatible:http://10.0.0.5:8000/v1#Qwen/Qwen2.5-7B-Instruct")

    assert model.model_name == "Qwen/Qwen2.5-7B-Instruct"
    assert base_url(model) == "http://10.0.0.5:8000/v1/"
    assert api_key(model) == "not-needed"  # the OpenAI key is not sent to another server
    assert api_key(load_model("openai-compatible:https://llm.internal/v1#m", api_key="k")) == "k"


@pytest.mark.parametrize("target", ["http://127.0.0.1:8000/v1", "127.0.0.1:8000/v1#m", "http://host/v1#"])
def test_malformed_openai_compatible_uri_is_a_user_error(target: str) -> None:
    with pytest.raises(
        UserError, match=r"expected 'openai-compatible:<http\(s\) base URL>#<model>'.*got 'openai-compatible:"
    ):
        load_model(f"openai-compatible:{target}")


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        (None, "http://127.0.0.1:11434/v1/"),
        ("http://gpu-box:11434", "http://gpu-box:11434/v1/"),
        ("gpu-box:11434", "http://gpu-box:11434/v1/"),
        ("https://ollama.example.com/", "https://ollama.example.com/v1/"),
    ],
)
def test_ollama_uri_uses_ollama_host(monkeypatch: pytest.MonkeyPatch, host: str | None, expected: str) -> None:
    if host is None:
        monkeypatch.delenv("OLLAMA_HOST", raising=False)
    else:
        monkeypatch.setenv("OLLAMA_HOST", host)

    model = load_model("ollama:llama3.2")

    assert model.model_name == "llama3.2"
    assert base_url(model) == expected


def test_deepseek_uri_uses_deepseek_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-ds")

    model = load_model("deepseek:deepseek-chat")

    assert base_url(model).rstrip("/") == "https://api.deepseek.com"
    assert api_key(model) == "sk-ds"
    assert model.structured_output is None  # type: ignore[attr-defined]  # DeepSeek has no json_schema format
    assert load_model("openai:gpt-4o-mini", api_key="sk").structured_output == "json_schema"  # type: ignore[attr-defined]


def test_deepseek_uri_without_a_key_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)

    with pytest.raises(UserError, match="expected DEEPSEEK_API_KEY in the environment, got none"):
        load_model("deepseek:deepseek-chat")


def test_constructor_options_pass_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)

    model = load_model("ollama:qwen3", timeout=7.5)

    assert isinstance(model, OpenAIChatModel)
    assert model.timeout == 7.5


def test_local_smollm2_uri_is_the_default_gguf() -> None:
    model = load_model("local:smollm2", n_ctx=1024)

    assert isinstance(model, LlamaCppChatModel)
    assert model.model_path == smollm2_model_path()
    assert model.n_ctx == 1024
    assert model.model_name == "SmolLM2-135M-Instruct.Q4_1"


def test_local_path_uri_is_that_gguf() -> None:
    model = load_model(f"local:{smollm2_model_path()}")

    assert isinstance(model, LlamaCppChatModel)
    assert model.model_path == smollm2_model_path()


def test_local_uri_with_a_missing_file_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"expected a GGUF file, got '/nowhere/model\.gguf' which does not exist"):
        load_model("local:/nowhere/model.gguf")


def test_local_uri_that_is_neither_smollm2_nor_a_gguf_is_a_user_error() -> None:
    with pytest.raises(
        UserError, match=r"expected 'local:smollm2' or 'local:<path to a \.gguf file>', got 'local:llama3'"
    ):
        load_model("local:llama3")


def test_unknown_provider_is_a_user_error_listing_the_known_ones() -> None:
    with pytest.raises(
        UserError,
        match=r"expected a provider in \['anthropic', 'deepseek', 'gemini', 'local', 'ollama', 'openai', 'openai-compatible'\], "
        r"got 'mistral'",
    ):
        load_model("mistral:large")


@pytest.mark.parametrize("uri", ["gpt-4o-mini", "openai:", ":gpt-4o-mini", ""])
def test_uri_without_provider_and_model_is_a_user_error(uri: str) -> None:
    with pytest.raises(UserError, match=rf"expected '<provider>:<model>' such as 'openai:gpt-4o-mini', got '{uri}'"):
        load_model(uri)
