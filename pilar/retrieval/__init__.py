"""Page retrieval: the PageIndex protocol, its backends, embeddings and the
hybrid scorer (PILAR §3.4, App. E.6).

:func:`open_index` picks the backend from config (the only place that looks
at ``settings.index``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

import numpy as np

from pilar.config import Settings
from pilar.model import Page


@runtime_checkable
class PageIndex(Protocol):
    """What a page index offers: BM25 and dense scores per page."""

    name: str

    def transaction(self) -> AbstractContextManager: ...
    def add_pages(self, pages: list[Page], vectors: list[np.ndarray],
                  unit_ids: list[list[str | None]] | None = None) -> None: ...
    def unit_vectors(self, unit_ids: list[str]) -> dict[str, np.ndarray]: ...
    def delete_document(self, doc_id: str) -> int: ...
    def count(self) -> int: ...
    def bm25(self, question: str, n: int) -> dict[str, float]: ...
    def bm25_for(self, question: str, page_ids: list[str]) -> dict[str, float]: ...
    def dense(self, query: np.ndarray, n: int | None = None,
              page_ids: list[str] | None = None) -> dict[str, float]: ...


def open_index(settings: Settings, db=None) -> PageIndex:
    """The page index chosen by ``settings.index``; ``db`` is the embedded
    SQLite database shared with the graph store.

    Raises :class:`pilar.errors.ConfigError` for a backend not available.
    """
    from pilar.errors import ConfigError

    if settings.index == "sqlite":
        from pilar.graph.sqlite import SqliteDatabase
        from pilar.retrieval.sqlite import SqlitePageIndex

        return SqlitePageIndex(db or SqliteDatabase(settings.db_path))
    raise ConfigError(f"page index backend {settings.index!r} is not available yet")
