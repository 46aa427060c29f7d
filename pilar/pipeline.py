"""The :class:`Pilar` facade: one object with the reach of the CLI.

It writes what ingestion returns to the graph store and the page index as
one unit of work per document, and serves queries by calling retrieval, then
packing. Backends come from config (:func:`pilar.stores.open_stores`).

Writes follow DESIGN.md's protocol for two separate stores: the graph
records the document ``pending``, the index is written, then the graph's
layers with status ``ready`` in one transaction (the visibility switch every
read honours); a failed write removes what it wrote, and documents left
``pending`` or ``deleting`` by a crash are removed by the next ingest (one
writer at a time), after which that file ingests afresh. On the embedded
store the whole unit is also one SQLite transaction.
"""

from __future__ import annotations

import glob
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path

import numpy as np

from pilar.config import PROFILES, Settings
from pilar.errors import IngestError, PilarError
from pilar.graph.linking import link_across
from pilar.ingest import parse, read_source
from pilar.model import (DEFAULT_COLLECTION, Document, IngestResult, Packet, ParsedDocument,
                         RankedPage, Scope, SearchResult, Support, Unit)
from pilar.packing.packet import PageEvidence, assemble, tables_of
from pilar.packing.selection import UnitSelector
from pilar.packing.tokens import TokenCounter
from pilar.retrieval.embeddings import Embedder
from pilar.retrieval.expansion import GraphRetriever
from pilar.retrieval.hybrid import HybridRetriever

Progress = Callable[[IngestResult], None]
MIN_BUDGET = 32
"""Smallest packet budget (tokens) a search accepts."""
MAX_UNIT_VECTORS = 5000
"""Units embedded per document at ingest (the rest are embedded when selected)."""
PAGE_CACHE = 1024
"""Pages whose supports and units a :class:`Pilar` keeps in memory for packing."""


NOT_DOCUMENTS = frozenset({".md", ".txt", ".rst", ".json", ".jsonl", ".csv", ".tsv", ".py",
                           ".toml", ".yml", ".yaml", ".cfg", ".ini", ".log"})
"""Suffixes skipped when walking a folder (notes and data beside documents);
files named explicitly are always tried, their type sniffed from content."""


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files named by ``paths``: files as given, folders walked recursively
    (hidden files and :data:`NOT_DOCUMENTS` suffixes skipped), glob patterns
    expanded; sorted within each argument, duplicates dropped. A path that
    matches nothing is kept so that ingestion reports it as missing."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file()
                              and f.suffix.lower() not in NOT_DOCUMENTS
                              and not any(part.startswith(".") for part in f.relative_to(p).parts)))
        elif p.exists():
            out.append(p)
        elif glob.has_magic(str(p)):
            out.extend(sorted(Path(m) for m in glob.glob(str(p), recursive=True)
                              if Path(m).is_file()))
        else:
            out.append(p)
    return list(dict.fromkeys(out))


def page_sections(parsed: ParsedDocument) -> list[list[str]]:
    """Per page of ``parsed`` (in order), the distinct section paths of its
    supports, each ``" > "``-joined: what the index keeps as keywords."""
    by_page: dict[int, dict[str, None]] = {p.number: {} for p in parsed.pages}
    for s in parsed.supports:
        path = s.provenance.section_path
        if path and s.provenance.page in by_page:
            by_page[s.provenance.page][" > ".join(path)] = None
    return [list(by_page[p.number]) for p in parsed.pages]


class Pilar:
    """pilar's Python API.

    ``Pilar(home=...)`` opens (creating if needed) the store under ``home``
    (default ``PILAR_HOME``); other settings come from the environment unless
    ``settings`` is given.
    """

    def __init__(self, home: str | Path | None = None, settings: Settings | None = None):
        settings = settings or Settings()
        if home is not None:
            settings = settings.model_copy(update={"home": Path(home)})
        self.settings = settings
        from pilar.stores import open_stores

        self.graph, self.index = open_stores(settings)
        self.embedder = Embedder(settings.embedding_model, settings.embedding_batch_size)
        self._pages: OrderedDict[str, tuple[list[Support], list[Unit]]] = OrderedDict()

    @cached_property
    def tokens(self) -> TokenCounter:
        return TokenCounter.for_reader(self.settings.reader_model, self.embedder.tokenizer,
                                       self.settings.embedding_model)

    @cached_property
    def hybrid(self) -> HybridRetriever:
        return HybridRetriever(self.graph, self.index, self.embedder, self.settings)

    def retriever(self, profile: str | None = None) -> GraphRetriever:
        """The graph-linking retriever for ``profile`` (default: settings').

        Raises ``ValueError`` for a profile not in :data:`pilar.config.PROFILES`."""
        if profile is not None and profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
        settings = self.settings
        if profile and profile != settings.profile:
            settings = settings.model_copy(update={"profile": profile})
        return GraphRetriever(self.graph, self.index, self.hybrid, settings.profiled())

    @cached_property
    def selector(self) -> UnitSelector:
        cross = None
        if self.settings.reranker_model:
            from sentence_transformers import CrossEncoder

            from pilar.retrieval.embeddings import resolve_model_path

            cross = CrossEncoder(resolve_model_path(self.settings.reranker_model), device="cpu")
        return UnitSelector(self.embedder, self.index.unit_vectors, cross, self.settings.prefilter,
                            self.settings.unit_page_weight)

    # -- ingestion -----------------------------------------------------------
    def ingest(self, paths: Iterable[str | Path] | str | Path,
               progress: Progress | None = None,
               collection: str = DEFAULT_COLLECTION) -> list[IngestResult]:
        """Ingest files, folders or globs into ``collection``; one
        :class:`IngestResult` per file.

        A file that fails gets ``status="failed"`` and a one-line ``reason``;
        the rest go on. Unchanged bytes are a no-op (``"unchanged"``, in
        whatever collection they are); new bytes at a known path replace the
        old document (``"replaced"``). Each document is written as one unit
        (see the module docstring); documents a crash left unfinished are
        removed first (:meth:`recover`).
        """
        if isinstance(paths, (str, Path)):
            paths = [paths]
        self.recover()
        results = []
        for path in expand_paths(paths):
            result = self.ingest_file(path, collection)
            results.append(result)
            if progress:
                progress(result)
        return results

    def recover(self) -> list[str]:
        """Remove the documents a crashed write left ``pending`` or
        ``deleting`` (index first, then graph); returns their ids. Assumes
        no other process is writing to the same stores."""
        stale = self.graph.documents(statuses=("pending", "deleting"))
        for doc in stale:
            self._remove(doc.doc_id)
        return [d.doc_id for d in stale]

    def ingest_file(self, path: Path, collection: str = DEFAULT_COLLECTION) -> IngestResult:
        """Ingest one file into ``collection``; never raises for bad input
        (see :meth:`ingest`). A document of the same bytes that a crash left
        unfinished is removed and written afresh."""
        t0 = time.perf_counter()
        uri = str(Path(path).resolve())
        shown = str(path)
        try:
            data = read_source(Path(path), self.settings)
            from pilar.ingest import new_document

            probe = new_document(data, uri, "")
            existing = self.graph.find_by_sha256(probe.sha256)
            if existing is not None and existing.status == "ready":
                return IngestResult(shown, "unchanged", existing.doc_id, existing.n_pages,
                                    seconds=time.perf_counter() - t0)
            if existing is not None:
                self._remove(existing.doc_id)
            parsed = parse(data, uri=uri, settings=self.settings)
            parsed.document.collection = collection
            replaced = self._store(parsed)
        except IngestError as exc:
            return IngestResult(shown, "failed", reason=exc.reason,
                                seconds=time.perf_counter() - t0)
        except PilarError as exc:
            return IngestResult(shown, "failed", reason=str(exc), seconds=time.perf_counter() - t0)
        except (MemoryError, RecursionError) as exc:
            return IngestResult(shown, "failed", reason=f"too large or deep to parse "
                                f"({type(exc).__name__})", seconds=time.perf_counter() - t0)
        except sqlite3.Error as exc:
            return IngestResult(shown, "failed", reason=f"store write failed: {exc}",
                                seconds=time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the batch
            first = str(exc).splitlines()[0] if str(exc) else ""
            return IngestResult(shown, "failed",
                                reason=f"unexpected {type(exc).__name__}: {first}".strip(": "),
                                seconds=time.perf_counter() - t0)
        return IngestResult(shown, "replaced" if replaced else "ingested", parsed.document.doc_id,
                            len(parsed.pages), len(parsed.supports), len(parsed.units),
                            n_assertions=len(parsed.assertions),
                            n_entities=len(parsed.entities), warnings=list(parsed.warnings),
                            seconds=time.perf_counter() - t0)

    def _embed(self, parsed: ParsedDocument) -> tuple[list[np.ndarray], list[list[str | None]]]:
        """Dense vectors per page: one per evidence unit (completed text, at
        most 128 tokens; at most ``MAX_UNIT_VECTORS`` per document), or text
        windows of the page when it has no embedded units. Returns the
        vectors and the unit id behind each row, page by page."""
        units = parsed.units[:MAX_UNIT_VECTORS]
        unit_vecs = self.embedder.encode([u.completed_text for u in units], max_tokens=128)
        by_page: dict[int, list[int]] = {}
        for i, u in enumerate(units):
            by_page.setdefault(u.page, []).append(i)
        # pages without embedded units: their text windows, in one batch;
        # pages without text get no vector (they are never dense hits)
        windows = {page.number: self.embedder.chunk(page.text, parsed.document.title)
                   for page in parsed.pages
                   if page.number not in by_page and page.text.strip()}
        flat = [w for ws in windows.values() for w in ws]
        window_vecs = self.embedder.encode(flat) if flat else None
        offset = 0
        vectors, ids = [], []
        for page in parsed.pages:
            rows = by_page.get(page.number)
            if rows:
                vectors.append(unit_vecs[rows])
                ids.append([units[i].unit_id for i in rows])
            elif page.number in windows:
                n = len(windows[page.number])
                vectors.append(window_vecs[offset:offset + n])
                ids.append([None] * n)
                offset += n
            else:
                vectors.append(np.zeros((0, self.embedder.dim), dtype=np.float32))
                ids.append([])
        return vectors, ids

    def _store(self, parsed: ParsedDocument) -> bool:
        """Write one parsed document to index and graph as one unit (see the
        module docstring); returns True when it replaced an older version at
        the same uri. On failure what was written is removed and the error
        raised."""
        vectors, unit_ids = self._embed(parsed)
        self._pages.clear()
        doc = parsed.document
        old = [d.doc_id for d in self.graph.find_by_uri(doc.uri) if d.doc_id != doc.doc_id]
        parsed.same_as = link_across(parsed, self.graph, self.settings)
        # on the embedded store the index transaction encloses everything
        # (one SQLite transaction); on servers each step commits on its own
        with self.index.transaction():
            self.graph.begin_document(doc)                       # 1. pending
            try:
                self.index.delete_document(doc.doc_id)           # leftovers of a crash
                self.index.add_pages(parsed.pages, vectors, unit_ids, collection=doc.collection,
                                     sections=page_sections(parsed))   # 2. index
                self.graph.write_document(parsed, replaces=old)  # 3. graph, ready
            except BaseException:
                self._remove(doc.doc_id, quiet=True)
                raise
            for doc_id in old:                                   # 4. old versions
                self._remove(doc_id)
        return bool(old)

    def _remove(self, doc_id: str, quiet: bool = False) -> bool:
        """Remove a document: hide it (``deleting``), drop its index pages,
        then its graph rows; False if the graph did not hold it. With
        ``quiet`` (cleaning up after a failed write) errors are swallowed:
        what is left stays hidden and the next ingest removes it."""
        try:
            self.graph.set_status(doc_id, "deleting")
            self.index.delete_document(doc_id)
            return self.graph.delete_document(doc_id)
        except Exception:  # noqa: BLE001 - only with quiet; the first error is the one to report
            if not quiet:
                raise
            return False

    # -- queries ---------------------------------------------------------------
    def search(self, question: str, budget: int | None = None, k: int | None = None,
               profile: str | None = None, collections: list[str] | None = None,
               doc_ids: list[str] | None = None) -> SearchResult:
        """Ranked pages (best first, at most ``k``, each with a ``trace`` of
        its score parts and graph path) and an evidence packet of at most
        ``budget`` tokens (PILAR §3.4-3.5, Tessera §3.4-3.5). ``profile`` is
        ``single-shot`` or ``multi-hop`` (default: ``PILAR_PROFILE``).
        ``collections`` and ``doc_ids`` (None = all) limit the pages, inside
        the index's BM25 and kNN queries and for expanded pages alike.

        Raises ``ValueError`` for an empty question, a budget under
        :data:`MIN_BUDGET` tokens, ``k < 1`` or an unknown profile, and
        ``TypeError`` when ``budget`` or ``k`` is not an int."""
        budget = self.settings.budget if budget is None else budget
        k = self.settings.top_k if k is None else k
        for name, value in (("budget", budget), ("k", k)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an integer, got {value!r}")
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question is empty")
        if budget < MIN_BUDGET:
            raise ValueError(f"budget must be at least {MIN_BUDGET} tokens, got {budget}")
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        for name, value in (("collections", collections), ("doc_ids", doc_ids)):
            if value is not None and (isinstance(value, str)
                                      or not all(isinstance(v, str) for v in value)):
                raise TypeError(f"{name} must be a list of strings, got {value!r}")
        scope = Scope.of(collections, doc_ids)
        pages = self.retriever(profile).search(question, k, None if scope.unlimited else scope)
        return SearchResult(question=question, pages=pages, packet=self.pack(question, pages, budget))

    def pack(self, question: str, pages: list[RankedPage], budget: int,
             use_units: bool = True) -> Packet:
        """The packet for already ranked ``pages`` (see :func:`pilar.packing.packet.assemble`)."""
        ids = [p.page_id for p in pages]
        material = self._page_material(ids)
        evidence = {p.page_id: PageEvidence(p, material[p.page_id][0]) for p in pages}
        selected, tables = [], {}
        if use_units:
            anchors = [(rank, u) for rank, pid in enumerate(ids) for u in material[pid][1]]
            selected = self.selector.select(question, anchors, [p.score for p in pages])
            tables = tables_of(u for _, u in anchors)
        s = self.settings
        return assemble(question, pages, evidence, selected, self.tokens, budget,
                        base_share=s.base_share, max_expanded=s.max_expanded_pages,
                        item_tokens=s.item_tokens, block_tokens=s.block_tokens,
                        use_units=use_units, tables=tables,
                        whole_table_share=s.whole_table_share, neighbours=s.neighbour_rows)

    def _page_material(self, page_ids: list[str]) -> dict[str, tuple[list[Support], list[Unit]]]:
        """``{page_id: (supports, units)}`` in document order, from an LRU of
        :data:`PAGE_CACHE` pages: units are query-independent and may be
        cached per page (Tessera §3.2), and pages are content-addressed (a
        doc_id is the SHA-256 of the bytes), so a cached page stays valid.
        Ingesting or deleting through this object empties the cache."""
        cache = self._pages
        missing = [pid for pid in dict.fromkeys(page_ids) if pid not in cache]
        if missing:
            supports = self.graph.supports_on_pages(missing)
            units = self.graph.units_on_pages(missing)
            for pid in missing:
                cache[pid] = (supports.get(pid, []), units.get(pid, []))
        for pid in page_ids:
            cache.move_to_end(pid)
        out = {pid: cache[pid] for pid in page_ids}
        while len(cache) > PAGE_CACHE:
            cache.popitem(last=False)
        return out

    def docs(self, collections: list[str] | None = None) -> list[Document]:
        """Stored (``ready``) documents, oldest first; only those in
        ``collections`` when given."""
        return self.graph.documents(collections=collections)

    def delete(self, doc_id: str) -> bool:
        """Delete a document from index and graph; False if it was not stored."""
        self._pages.clear()
        with self.index.transaction():
            return self._remove(doc_id)

    def stats(self) -> dict[str, int]:
        """Counts of documents, pages, supports, provenance, units, tables,
        assertions, entities and each edge type; the same keys on every backend."""
        return self.graph.stats()

    def migrate(self) -> dict[str, list[int]]:
        """Apply pending schema migrations to every store (idempotent; the
        stores also migrate on open). Returns the versions applied per store."""
        return {f"graph:{self.graph.name}": self.graph.migrate(),
                f"index:{self.index.name}": self.index.migrate()}

    def close(self) -> None:
        """Close both stores (the object is unusable afterwards)."""
        self.graph.close()
        self.index.close()

    def cypher(self, query: str, params: dict | None = None, *, timeout: float = 30.0,
               row_cap: int = 1000):
        """Run a read-only Cypher query on the graph
        (:meth:`pilar.graph.GraphStore.cypher`); raises
        :class:`~pilar.errors.ConfigError` when the graph is not on Neo4j."""
        return self.graph.cypher(query, params, timeout=timeout, row_cap=row_cap)
