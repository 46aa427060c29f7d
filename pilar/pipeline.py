"""The :class:`Pilar` facade: one object with the reach of the CLI.

It wires the layers and delegates, owning no layer's logic. Backends come
from config (:func:`pilar.stores.open_stores`); its ingest methods are
:class:`pilar.ingest_run.Ingests` (each parsed document one unit of work in
the page index and the graph: :mod:`pilar.writes`) and its graph reads
:class:`pilar.graph.reads.GraphReads`; requests are checked by
:mod:`pilar.query`; queries rank with :class:`pilar.retrieval.profiles.Retrievers`,
pack with :class:`~pilar.packing.packer.Packer` on the page material of
:class:`~pilar.stores.PageCache`, then read with :class:`pilar.reader.Reader`;
evaluation is :func:`pilar.eval.run.evaluate_search` over the same search.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from pilar.config import Settings, settings_at
from pilar.eval.questions import Question
from pilar.eval.run import EvalReport, SearchMethod, evaluate_search
from pilar.graph.reads import GraphReads
from pilar.ingest_run import Ingests
from pilar.model import Answer, Packet, RankedPage, Scope, SearchResult
from pilar.packing.packer import Packer
from pilar.packing.statistics import fill_stats
from pilar.packing.tokens import TokenCounter
from pilar.query import Query, options, require_scope
from pilar.retrieval.embeddings import Embedder
from pilar.retrieval.expansion import GraphRetriever
from pilar.retrieval.hybrid import HybridRetriever
from pilar.retrieval.profiles import PRIME_BATCH, Retrievers
from pilar.stores import PageCache, open_stores
from pilar.writes import DocumentWriter

if TYPE_CHECKING:
    from pilar.reader import AnswerStream, Reader


class Pilar(Ingests, GraphReads):
    """pilar's Python API.

    ``Pilar(home=...)`` opens (creating if needed, unless ``create`` is
    False) the store under ``home`` (default ``PILAR_HOME``); other settings
    come from the environment unless ``settings`` is given. Raises
    :class:`~pilar.errors.ConfigError` when ``home`` is (or lies below) a
    file, :class:`~pilar.errors.EmptyStoreError` when ``create`` is False
    and there is no embedded store, :class:`~pilar.errors.StoreError` when a
    store cannot be opened."""

    def __init__(self, home: str | Path | None = None, settings: Settings | None = None,
                 create: bool = True):
        self.settings = settings = settings_at(home, settings)
        self.graph, self.index = open_stores(settings, create=create)
        self.embedder = Embedder.of(settings)
        self.pages = PageCache(self.graph, lambda: self.tokens)
        self.retrievers = Retrievers(self.graph, self.index, self.embedder, settings)
        self.writer = DocumentWriter(self.graph, self.index, settings, self.pages.clear,
                                     lambda units: fill_stats(units, self.tokens))

    @cached_property
    def tokens(self) -> TokenCounter:
        """The reader's token counter (:meth:`pilar.packing.tokens.TokenCounter.of`)."""
        return TokenCounter.of(self.settings, self.embedder)

    @cached_property
    def reader(self) -> "Reader":
        """The reader (:meth:`pilar.reader.Reader.of`); raises
        :class:`~pilar.errors.ReaderNotConfiguredError` without a model server."""
        from pilar.reader import Reader

        return Reader.of(self.settings, lambda: self.tokens)

    @property
    def hybrid(self) -> HybridRetriever:
        """The base hybrid retriever (BM25 + dense, PILAR §3.3)."""
        return self.retrievers.hybrid

    def retriever(self, profile: str | None = None) -> GraphRetriever:
        """The graph-linking retriever for ``profile`` (default: settings');
        raises ``ValueError`` for an unknown profile (:meth:`Retrievers.get
        <pilar.retrieval.profiles.Retrievers.get>`)."""
        return self.retrievers.get(profile)

    @cached_property
    def packer(self) -> Packer:
        """The packer of these settings (:meth:`pilar.packing.packer.Packer.of`)."""
        return Packer.of(self.settings, self.embedder, self.index.unit_vectors, self.tokens)

    # -- ingestion: ingest, recover, ingest_file, ingest_job (pilar.ingest_run.Ingests) --

    # -- queries ---------------------------------------------------------------
    def search(self, question: str, budget: int | None = None, k: int | None = None,
               profile: str | None = None, collections: list[str] | None = None,
               doc_ids: list[str] | None = None) -> SearchResult:
        """Ranked pages (best first, at most ``k``, each with a ``trace``) and
        an evidence packet of at most ``budget`` tokens (PILAR §3.4-3.5,
        Tessera §3.4-3.5); ``collections`` and ``doc_ids`` (None = all) limit
        the pages. Raises what :meth:`query` raises, then what
        :meth:`Retrievers.rank <pilar.retrieval.profiles.Retrievers.rank>`
        raises (:class:`~pilar.errors.EmptyStoreError`), and
        :class:`~pilar.errors.ConfigError` when a model cannot be loaded."""
        q = self.query(question, budget, k, profile, collections, doc_ids)
        pages = self.retrievers.rank(q)
        return SearchResult(question=question, pages=pages,
                            packet=self.pack(question, pages, q.budget))

    def query(self, question, budget=None, k=None, profile=None, collections=None,
              doc_ids=None) -> Query:
        """The checked request of a read (:meth:`pilar.query.Query.of` with
        these settings, then :meth:`require_scope`); raises ``ValueError``,
        ``TypeError`` or :class:`~pilar.errors.UnknownScopeError`, the same on every face."""
        q = Query.of(self.settings, question, budget, k, profile, collections, doc_ids)
        self.require_scope(q.scope)
        return q

    def require_scope(self, scope: Scope) -> None:
        """Raise :class:`~pilar.errors.UnknownScopeError` unless every
        collection and document id of ``scope`` holds a stored document
        (:func:`pilar.query.require_scope`)."""
        require_scope(scope, self.graph.documents)

    def ask(self, question: str, budget: int | None = None, k: int | None = None,
            profile: str | None = None, collections: list[str] | None = None,
            doc_ids: list[str] | None = None, stream: bool = False) -> "Answer | AnswerStream":
        """An answer with ``[n]`` citations from the packet of :meth:`search`
        (:meth:`pilar.reader.Reader.reply`, PILAR App. H.2-H.3; an
        :class:`~pilar.reader.AnswerStream` with ``stream``). Raises what
        :meth:`query` raises, then :class:`~pilar.errors.ReaderNotConfiguredError`,
        :class:`~pilar.errors.LLMError` kinds and what :meth:`search` raises."""
        budget = self.query(question, budget, k, profile, collections, doc_ids).budget
        hit = self.search(question, self.reader.text_budget(budget), k, profile, collections,
                          doc_ids)
        return self._reply(question, hit.packet, budget, stream)

    def _reply(self, question: str, packet: Packet, budget: int,
               stream: bool = False) -> "Answer | AnswerStream":
        return self.reader.reply(question, packet, budget, self.pages.supports,
                                 self.graph.documents, stream)

    def evaluate(self, questions: str | Path | list[Question], budget: int | None = None,
                 k: int | None = None, profile: str | None = None, limit: int | None = None,
                 progress: Callable[[int, int], None] | None = None, reader: bool = False,
                 collections: list[str] | None = None) -> EvalReport:
        """Evaluate search (and with ``reader`` the answers, as :meth:`ask`
        gives them) over a questions file (``limit``: a fixed-seed sample) or
        list: :func:`pilar.eval.run.evaluate_search`, its figures and notes.
        Raises :class:`~pilar.errors.QuestionsError` for an unreadable file,
        :class:`~pilar.errors.ReaderNotConfiguredError` with ``reader`` and
        no model server, and what :meth:`search` raises for bad options."""
        budget, k, profile, scope = options(self.settings, budget, k, profile, collections)
        self.require_scope(scope)
        read = self.reader if reader else None  # no reader: say so before the first question
        method = SearchMethod.of(self.retrievers.ranker(profile, scope), self.pack, k, budget,
                                 read, self._reply)
        return evaluate_search(questions, method, budget=budget, k=k, profile=profile,
                               limit=limit, progress=progress, batch=PRIME_BATCH,
                               prepare=self.retrievers.prime)

    def pack(self, question: str, pages: list[RankedPage], budget: int,
             use_units: bool = True) -> Packet:
        """The packet for already ranked ``pages`` (:meth:`pilar.packing.packer.Packer.pack`)."""
        material = self.pages.material([p.page_id for p in pages])
        return self.packer.pack(question, pages, material, budget, use_units)

    # -- exploration (page, entities, entity, entity_documents, neighborhood,
    # docs, stats: pilar.graph.reads.GraphReads) ---------------------------------
    def row_headers(self, page_id: str) -> dict[str, tuple[str, ...]]:
        """``{support_id: column headers}`` of the page's table rows
        (:meth:`PageCache.row_headers <pilar.stores.PageCache.row_headers>`)."""
        return self.pages.row_headers(page_id)

    def delete(self, doc_id: str) -> bool:
        """Delete a document and its uploaded sources no other document
        uses; False if it was not stored (:meth:`pilar.writes.DocumentWriter.delete`)."""
        return self.writer.delete(doc_id)

    def migrate(self) -> dict[str, list[int]]:
        """Apply pending schema migrations to every store (idempotent);
        the versions applied per store."""
        return {f"graph:{self.graph.name}": self.graph.migrate(),
                f"index:{self.index.name}": self.index.migrate()}

    def close(self) -> None:
        """Close both stores, the index first (it may persist data read from
        a store file it shares with the graph)."""
        self.index.close()
        self.graph.close()

    def cypher(self, query: str, params: dict | None = None, *, timeout: float = 30.0,
               row_cap: int = 1000):
        """A read-only Cypher query on the graph (:meth:`pilar.graph.GraphStore.cypher`),
        cut at ``row_cap`` rows and ``PILAR_CYPHER_MAX_BYTES``; raises
        :class:`~pilar.errors.CypherError` and, off Neo4j, :class:`~pilar.errors.ConfigError`."""
        return self.graph.cypher(query, params, timeout=timeout, row_cap=row_cap,
                                 byte_cap=self.settings.cypher_max_bytes)
