"""Documents: the splitters, and loading from files, folders and URLs on allowed hosts."""

from __future__ import annotations

from pathlib import Path

import pytest

from batonflow.flow import (
    AiFlowEngine,
    Document,
    FlowComponentError,
    FlowMetaError,
    RegexTextSplitter,
    SplitterPipeline,
    TokenSizeTextSplitter,
)
from batonflow.graph import FlowContext, Graph

from .conftest import WordEmbedding


def test_the_regex_splitter_cuts_at_blank_lines_and_drops_empty_chunks() -> None:
    documents = RegexTextSplitter().split([Document("one\n\ntwo\n\n\n\nthree", {"source": "s"})])

    assert [d.content for d in documents] == ["one", "two", "three"]
    assert all(d.metadata == {"source": "s"} for d in documents)


def test_the_regex_splitter_takes_a_pattern() -> None:
    assert [d.content for d in RegexTextSplitter(r"\s*;\s*").split([Document("a; b ;c")])] == ["a", "b", "c"]


def test_the_token_splitter_cuts_at_the_last_sentence_end_past_the_minimum() -> None:
    text = "Alpha beta gamma. Delta epsilon zeta eta! Theta iota kappa lambda mu."
    splitter = TokenSizeTextSplitter(chunk_size=12, min_chunk_size_chars=10, min_chunk_length_to_embed=0)

    chunks = splitter.split_text(text)

    assert chunks == ["Alpha beta gamma.", "Delta epsilon zeta eta!", "Theta iota kappa lambda mu."]


def test_the_token_splitter_counts_cjk_characters_one_by_one() -> None:
    splitter = TokenSizeTextSplitter(chunk_size=4, min_chunk_size_chars=100, min_chunk_length_to_embed=0)

    assert splitter.split_text("统一的开发框架") == ["统一的开", "发框架"]


def test_the_token_splitter_drops_short_chunks_and_keeps_the_rest_past_the_chunk_count() -> None:
    splitter = TokenSizeTextSplitter(
        chunk_size=2, min_chunk_size_chars=100, min_chunk_length_to_embed=3, max_chunk_count=2
    )

    # "ab" and "cd" are too short to keep but count as chunks: the rest is one chunk after them
    assert splitter.split_text("ab cd efgh ij kl mn") == ["efgh ij kl mn"]
    assert TokenSizeTextSplitter().split_text("   ") == []


def test_a_pipeline_chains_splitters() -> None:
    pipeline = SplitterPipeline([RegexTextSplitter(), RegexTextSplitter(r"\. ")])

    assert [d.content for d in pipeline.split([Document("a. b\n\nc")])] == ["a", "b", "c"]
    assert [d.content for d in SplitterPipeline().split([Document("whole")])] == ["whole"]


def test_a_document_is_written_as_solon_writes_it() -> None:
    document = Document("text", {"source": "a.md"}, "id1", 0.5)

    assert str(document) == "Document{id='id1', score=0.5, content='text', metadata={source=a.md}}"


def repository_flow(source: str, splitters: str = "[RegexTextSplitter]") -> Graph:
    return Graph.from_yaml(
        "id: g\nlayout:\n"
        '  - {task: "@EmbeddingModel", meta: {embeddingConfig: {model: words}}}\n'
        f'  - {{id: repo, task: "@InMemoryRepository", meta: {{documentSources: ["{source}"], splitPipeline: {splitters}}}}}\n'
    )


async def stored(engine: AiFlowEngine, graph: Graph) -> list[str]:
    words = WordEmbedding()
    engine.register("words", words)
    await engine.eval(graph, FlowContext(variables={"message": "query"}))
    return [text for call in words.calls[:-1] for text in call]  # the last call embeds the query


async def test_a_folder_source_loads_its_text_files_through_the_pipeline(tmp_path: Path) -> None:
    (tmp_path / "docs" / "more").mkdir(parents=True)
    (tmp_path / "docs" / "a.md").write_text("first\n\nsecond")
    (tmp_path / "docs" / "more" / "b.txt").write_text("third")
    (tmp_path / "docs" / "image.png").write_bytes(b"\x89PNG")
    engine = AiFlowEngine(base_dir=tmp_path)

    assert await stored(engine, repository_flow("docs")) == ["first", "second", "third"]


async def test_a_file_source_is_read_relative_to_the_base_folder(tmp_path: Path) -> None:
    (tmp_path / "one.md").write_text("only\n\nthis")

    assert await stored(AiFlowEngine(base_dir=tmp_path), repository_flow("file:one.md", "[]")) == ["only\n\nthis"]


async def test_a_missing_source_is_a_meta_error(tmp_path: Path) -> None:
    with pytest.raises(FlowMetaError) as caught:
        await stored(AiFlowEngine(base_dir=tmp_path), repository_flow("nowhere"))

    assert (caught.value.node_id, caught.value.meta) == ("repo", "documentSources")
    assert "no such file or folder" in str(caught.value)


async def test_an_unknown_splitter_is_a_meta_error(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("x")
    with pytest.raises(FlowMetaError) as caught:
        await stored(AiFlowEngine(base_dir=tmp_path), repository_flow("a.md", "[org.example.NoSplitter]"))

    assert caught.value.meta == "splitPipeline" and "'org.example.NoSplitter'" in str(caught.value)


async def test_solon_s_splitter_class_names_and_registered_splitters_are_known(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("x1\n\nx2")

    class Upper:
        def split(self, documents: list[Document]) -> list[Document]:
            return [Document(d.content.upper(), d.metadata) for d in documents]

    engine = AiFlowEngine(base_dir=tmp_path)
    engine.register("upper", Upper())
    graph = repository_flow("a.md", "[org.noear.solon.ai.rag.splitter.RegexTextSplitter, upper]")

    assert await stored(engine, graph) == ["X1", "X2"]


async def test_a_url_on_an_allowed_host_is_fetched(static_site: str, tmp_path: Path) -> None:
    (tmp_path / "site" / "about.md").write_text("Solon\n\nby noear")
    engine = AiFlowEngine(allowed_hosts=[static_site.removeprefix("http://")])

    assert await stored(engine, repository_flow(f"{static_site}/about.md")) == ["Solon", "by noear"]


async def test_a_url_on_a_host_that_is_not_allowed_is_refused_before_any_request(static_site: str) -> None:
    with pytest.raises(FlowMetaError) as caught:
        await stored(AiFlowEngine(allowed_hosts=["example.org"]), repository_flow(f"{static_site}/about.md"))

    assert caught.value.meta == "documentSources"
    assert "allowed hosts: ['example.org']" in str(caught.value)


async def test_a_redirect_to_a_host_that_is_not_allowed_is_refused(static_site: str, tmp_path: Path) -> None:
    (tmp_path / "site" / "about.md").write_text("x")
    engine = AiFlowEngine(allowed_hosts=[static_site.removeprefix("http://")])  # 127.0.0.1:<port>, not ::1

    with pytest.raises(FlowMetaError) as caught:
        await stored(engine, repository_flow(f"{static_site}/moved"))

    assert "connects to the host [::1]:" in str(caught.value)


async def test_a_url_that_fails_is_a_component_error(static_site: str) -> None:
    engine = AiFlowEngine(allowed_hosts=[static_site.removeprefix("http://")])

    with pytest.raises(FlowComponentError) as caught:
        await stored(engine, repository_flow(f"{static_site}/missing.md"))

    assert caught.value.meta == "documentSources" and "404" in str(caught.value)
