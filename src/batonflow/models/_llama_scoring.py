"""Text scoring on llama.cpp: how likely a model finds a text after another (``LlamaCppChatModel.log_likelihood``).

The scoring runs on a context of its own, so that it leaves the chat's prompt cache as it was, and keeps the state
after each prefix it scored lately: a router scoring the same examples every turn decodes only the request.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

from ..errors import ModelError

__all__ = ["SCORED_PREFIXES", "SCORING_N_CTX", "LlamaScorer"]

SCORING_N_CTX = 2048
"""The context window of the text scoring: a prefix of examples and a request."""
SCORED_PREFIXES = 16
"""How many prefixes' states the scoring keeps, so that scoring after one again decodes only the text."""


class LlamaScorer:
    """Scores texts on the llama.cpp context ``load`` makes (on first use), one at a time."""

    def __init__(self, load: Callable[[], Any], model_name: str) -> None:
        self._load = load
        self.model_name = model_name
        self._llama: Any = None
        self._lock = threading.Lock()
        self._prefixes: dict[str, Any] = {}  # the context's state after each prefix scored lately, latest last

    def score(self, prefix: str, text: str) -> tuple[float, int]:
        """The sum of ``text``'s token log-probabilities after ``prefix`` (both plain text; ``text`` tokenized on
        its own, so every prefix scores the same tokens), and how many tokens that took."""
        with self._lock:
            if self._llama is None:
                self._llama = self._load()
            llama = self._llama
            start = llama.tokenize(prefix.encode(), add_bos=True)
            tokens = llama.tokenize(text.encode(), add_bos=False)
            if len(start) + len(tokens) > SCORING_N_CTX:
                raise ModelError(
                    f"local model {self.model_name!r}: the text to score does not fit in the scoring context: "
                    f"expected at most {SCORING_N_CTX} tokens, got {len(start) + len(tokens)}",
                    model=self.model_name,
                )
            state = self._prefixes.pop(prefix, None)
            if state is None:
                llama.reset()
                llama.eval(start[:-1])
                state = llama.save_state()
            else:
                llama.load_state(state)
            self._prefixes[prefix] = state
            while len(self._prefixes) > SCORED_PREFIXES:
                del self._prefixes[next(iter(self._prefixes))]
            return sum(_log_probabilities(llama, start, tokens)), len(start) + len(tokens)


def _log_probabilities(llama: Any, start: list[int], tokens: list[int]) -> list[float]:
    """The log-probability of each of ``tokens`` after ``start`` and the ones before it, ``llama`` holding all of
    ``start`` but its last token. The rest is decoded in one batch with logits at each position, behind
    ``llama``'s back: it goes on holding what it held, and its next ``eval`` drops the batch from the cache."""
    import llama_cpp
    import numpy  # llama-cpp-python's own dependency

    feed = [start[-1], *tokens[:-1]]
    position = len(start) - 1
    batch = llama_cpp.llama_batch_init(len(feed), 0, 1)
    try:
        for index, token in enumerate(feed):
            batch.token[index] = token
            batch.pos[index] = position + index
            batch.n_seq_id[index] = 1
            batch.seq_id[index][0] = 0
            batch.logits[index] = True
        batch.n_tokens = len(feed)
        if llama_cpp.llama_decode(llama.ctx, batch) != 0:
            raise ModelError("llama.cpp could not decode the text to score")
        shape = (llama.n_vocab(),)
        probabilities = []
        for index, token in enumerate(tokens):
            row = numpy.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama.ctx, index), shape=shape)
            top = float(row.max())
            probabilities.append(float(row[token]) - top - math.log(float(numpy.exp(row - top).sum())))
        return probabilities
    finally:
        llama_cpp.llama_batch_free(batch)
