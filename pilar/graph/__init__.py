"""Graph stores: the document, page, support and provenance layers (and, with
their issues, assertions and entities) of DESIGN.md.

:class:`GraphStore` names what every backend does; :func:`open_graph` picks
the backend from config (the only place that looks at ``settings.graph``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from pilar.config import Settings
from pilar.model import Assertion, Document, Entity, Page, ParsedDocument, Support, Unit


@runtime_checkable
class GraphStore(Protocol):
    """What a graph backend offers. Writes are per document atomic: a
    document is either fully visible or not at all."""

    name: str

    def transaction(self) -> AbstractContextManager[None]: ...
    def find_by_sha256(self, sha256: str) -> Document | None: ...
    def find_by_uri(self, uri: str) -> list[Document]:
        """Documents that have ``uri`` among their ``sources``."""
        ...
    def add_source(self, doc_id: str, uri: str) -> bool:
        """Record ``uri`` as another location of the stored document
        ``doc_id`` (a copy of the same bytes); False when it was one already
        or there is no such document."""
        ...
    def remove_source(self, doc_id: str, uri: str) -> None:
        """Forget ``uri`` as a location of ``doc_id`` (new bytes arrived
        there); ``Document.uri`` moves to the next source when it was this one."""
        ...
    def documents(self, doc_ids: list[str] | None = None) -> list[Document]:
        """Stored documents, oldest first (then by uri): all, or those of
        ``doc_ids`` that exist. One read whatever the number of ids."""
        ...
    def pages(self, page_ids: list[str]) -> dict[str, Page]: ...
    def supports_on_pages(self, page_ids: list[str]) -> dict[str, list[Support]]:
        """``{page_id: [Support, ...]}`` (document order, with provenance) for
        every id given; one read for all pages."""
        ...
    def units_on_pages(self, page_ids: list[str]) -> dict[str, list[Unit]]:
        """``{page_id: [Unit, ...]}`` (document order) for every id given; one
        read for all pages."""
        ...
    def stats(self) -> dict[str, int]: ...
    def write_document(self, parsed: ParsedDocument, replaces: list[str] = ()) -> Document: ...
    def delete_document(self, doc_id: str) -> bool: ...
    def entity_candidates(self, name: str, limit: int = 20) -> list[Entity]: ...
    def get_entities(self, entity_ids: list[str]) -> dict[str, Entity]: ...
    def assertions_of(self, doc_id: str) -> list[Assertion]: ...
    def page_sections(self, page_ids: list[str]) -> dict[str, set[tuple[str, ...]]]: ...
    def expansion_pages(self, entity_ids: list[str],
                        limit: int = 50) -> dict[str, dict[str, list[str]]]:
        """``{"mention" | "alias" | "assertion": {page_id: [path step, ...]}}``:
        the pages the graph reaches from ``entity_ids`` (at most ``limit`` per
        entity and kind), in one read; see the backends for the order."""
        ...


def add_expansion_rows(out: dict[str, dict[str, list[str]]], eid: str, mention: list,
                       alias: list, assertion: list) -> None:
    """Add the expansion rows of entity ``eid`` to ``out`` (the shape of
    :meth:`GraphStore.expansion_pages`); a page keeps the first path that
    reached it. Rows, in the order the backend ranked them:
    ``mention`` ``[page_id, support_id]``; ``alias`` ``[page_id,
    other_entity_id, score, method, support_id]``; ``assertion`` ``[page_id,
    assertion_id, predicate, support_id]``."""
    for pid, sid in mention:
        out["mention"].setdefault(pid, [f"entity:{eid}", "MENTIONED_IN", f"support:{sid}",
                                        f"page:{pid}"])
    for pid, other, score, method, sid in alias:
        out["alias"].setdefault(pid, [f"entity:{eid}", f"SAME_AS({method}, {score:.2f})",
                                      f"entity:{other}", "MENTIONED_IN", f"support:{sid}",
                                      f"page:{pid}"])
    for pid, aid, pred, sid in assertion:
        out["assertion"].setdefault(pid, [f"entity:{eid}", f"assertion:{aid} ({pred})",
                                          "SUPPORTED_BY", f"support:{sid}", f"page:{pid}"])

def open_graph(settings: Settings, db=None) -> GraphStore:
    """The graph store chosen by ``settings.graph``. ``db`` is the embedded
    :class:`~pilar.graph.sqlite.SqliteDatabase` to share with the page index.

    Raises :class:`pilar.errors.ConfigError` for a backend that is not available.
    """
    from pilar.errors import ConfigError

    if settings.graph == "sqlite":
        from pilar.graph.sqlite import SqliteDatabase, SqliteGraphStore

        return SqliteGraphStore(db or SqliteDatabase(settings.db_path))
    if settings.graph == "neo4j":
        from pilar.graph.neo4j import Neo4jGraphStore

        if not settings.neo4j_uri:
            raise ConfigError("PILAR_GRAPH=neo4j needs NEO4J_URI")
        auth = ((settings.neo4j_username, settings.neo4j_password or "")
                if settings.neo4j_username else None)
        return Neo4jGraphStore(settings.neo4j_uri, auth)
    raise ConfigError(f"graph backend {settings.graph!r} is not available yet")
