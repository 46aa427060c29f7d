"""Read-only Cypher exploration for analysts (``pilar cypher``).

Queries run in a READ access-mode transaction, so the server itself refuses
writes (CREATE, MERGE, SET, DELETE, writing procedures); each query has a
timeout (seconds) and a row cap; results become JSON-safe values (nodes,
relationships and paths as dicts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pilar.errors import PilarError


class CypherError(PilarError):
    """The server refused or failed the query; ``code`` is Neo4j's status code
    (``Neo.ClientError...`` for a client error such as a write in read mode)."""

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.code = code

    @property
    def is_client_error(self) -> bool:
        return bool(self.code and self.code.startswith("Neo.ClientError"))


@dataclass(slots=True)
class CypherResult:
    """Columns, rows (JSON-safe) and whether the row cap cut the result."""

    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool
    row_cap: int


def to_json_value(value: Any) -> Any:
    """Convert driver values (Node, Relationship, Path, temporal, spatial) to
    JSON-safe dicts, lists and scalars."""
    from neo4j.graph import Node, Path, Relationship

    if isinstance(value, Node):
        return {"element_id": value.element_id, "labels": sorted(value.labels),
                "properties": {k: to_json_value(v) for k, v in value.items()}}
    if isinstance(value, Relationship):
        return {"element_id": value.element_id, "type": value.type,
                "start": value.start_node.element_id if value.start_node else None,
                "end": value.end_node.element_id if value.end_node else None,
                "properties": {k: to_json_value(v) for k, v in value.items()}}
    if isinstance(value, Path):
        return {"nodes": [to_json_value(n) for n in value.nodes],
                "relationships": [to_json_value(r) for r in value.relationships]}
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, bytes):
        return value.hex()
    return str(value)  # temporal and spatial values: their ISO / WKT-like text


def run_read_query(driver, query: str, params: dict[str, Any] | None = None, *,
                   database: str | None = None, timeout: float = 30.0,
                   row_cap: int = 1000) -> CypherResult:
    """Run ``query`` read-only with bound ``params``.

    At most ``row_cap`` rows are returned (``truncated`` says if more
    existed); the server aborts the transaction after ``timeout`` seconds.
    Raises :class:`CypherError` (a client error for writes in read mode,
    syntax errors and timeouts).
    """
    import neo4j

    def work(tx):
        result = tx.run(query, params or {})
        rows, truncated = [], False
        for record in result:
            if len(rows) >= row_cap:
                truncated = True
                break
            rows.append({k: to_json_value(v) for k, v in record.items()})
        keys = list(result.keys())
        result.consume()
        return keys, rows, truncated

    try:
        with driver.session(database=database, default_access_mode=neo4j.READ_ACCESS) as session:
            tx_fn = neo4j.unit_of_work(timeout=timeout)(work)
            columns, rows, truncated = session.execute_read(tx_fn)
    except neo4j.exceptions.Neo4jError as exc:
        raise CypherError(f"{exc.code}: {exc.message}", exc.code) from None
    except neo4j.exceptions.DriverError as exc:
        raise CypherError(f"driver error: {exc}") from None
    return CypherResult(columns, rows, truncated, row_cap)


MAX_DEPTH = 3
"""Hops a neighbourhood may span at most."""


def neighborhood(graph, entity_id: str, depth: int = 1, doc_ids: set[str] | None = None,
                 limit: int = 50):
    """The :class:`~pilar.model.Neighborhood` of ``entity_id`` within ``depth``
    hops (1 to :data:`MAX_DEPTH`) on any :class:`~pilar.graph.GraphStore`.

    A hop follows the assertions an entity is subject or object of (to the
    entity at their other end) and its ``SAME_AS`` links; each hop reads the
    store once per kind (:meth:`GraphStore.entity_links`, at most ``limit``
    assertions and mentions per entity). With ``doc_ids`` only assertions
    and supports of those documents are kept, and only entities those
    documents use (so nothing of another collection shows). Returns None
    when the entity does not exist (or no allowed document uses it).
    Raises ``ValueError`` for a depth outside 1..MAX_DEPTH."""
    from pilar.model import Neighborhood

    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
    start = graph.get_entities([entity_id])
    if entity_id not in start or (doc_ids is not None and not _used_in(graph, [entity_id], doc_ids)):
        return None
    seen = {entity_id}
    frontier = [entity_id]
    assertions, same_as, mentions = {}, {}, []
    for _ in range(depth):
        links = graph.entity_links(frontier, limit)
        found = []
        for a in links.assertions:
            if doc_ids is not None and a.doc_id not in doc_ids:
                continue
            assertions.setdefault(a.assertion_id, a)
            found += [e for e in (a.subject_entity, a.object_entity) if e]
        mentions += links.mentions
        linked = {e for link in links.same_as for e in (link.source, link.target)} - seen
        if doc_ids is not None and linked:
            linked = _used_in(graph, sorted(linked), doc_ids)
        for link in links.same_as:
            if {link.source, link.target} <= seen | linked:
                same_as.setdefault((link.source, link.target), link)
        found += sorted(linked)
        frontier = [e for e in dict.fromkeys(found) if e not in seen]
        seen.update(frontier)
        if not frontier:
            break
    support_ids = list(dict.fromkeys(
        [sid for a in assertions.values() for sid in a.supports] + [sid for _, sid in mentions]))
    supports = [s for s in graph.supports_by_id(support_ids).values()
                if doc_ids is None or s.doc_id in doc_ids]
    supports.sort(key=lambda s: (s.doc_id, s.provenance.page, s.support_id))
    kept = {s.support_id for s in supports}
    entities = graph.get_entities(sorted(seen))
    pages = list(dict.fromkeys(f"{s.doc_id}:{s.provenance.page}" for s in supports))
    return Neighborhood(entities=[entities[e] for e in sorted(entities)],
                        assertions=sorted(assertions.values(), key=lambda a: a.assertion_id),
                        same_as=[same_as[k] for k in sorted(same_as)], supports=supports,
                        pages=pages, mentions=[m for m in dict.fromkeys(mentions)
                                               if m[1] in kept])


def _used_in(graph, entity_ids: list[str], doc_ids: set[str]) -> set[str]:
    """The entities of ``entity_ids`` that some document of ``doc_ids`` uses."""
    return {eid for eid, docs in graph.entity_documents(entity_ids).items()
            if doc_ids.intersection(docs)}
