"""Read-only Cypher exploration for analysts (``pilar cypher``, ``/v1/cypher``,
the MCP ``cypher`` tool).

A query is first planned with ``EXPLAIN`` and refused unless its plan only
reads the graph (:mod:`pilar.graph.neo4j_guard`: no ``LOAD CSV``, no
procedure outside an allow-list, no ``SHOW``/administration command, no
write); then it runs in a READ access-mode transaction (the server refuses
writes a second time) with a server-side timeout (seconds: the server ends
the transaction), a row cap and a byte cap. Results become JSON-safe values
(nodes, relationships and paths as dicts).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pilar.errors import TIMED_OUT, CypherError
from pilar.graph.neo4j_guard import refusal

HOME_DATABASE = "EXPLAIN RETURN 1"
"""Planned (never run) beside a query to learn the session's database."""
FETCH_SIZE = 100
"""Records the driver fetches per round trip: the byte cap is checked between them."""
PLANNED = "EXPLAIN "
"""Put before a query to plan it without running it."""
_POSITION = re.compile(r"\(line (\d+), column (\d+) \(offset: (\d+)\)\)")


@dataclass(slots=True)
class CypherResult:
    """Columns, rows (JSON-safe), and whether a cap cut the result
    (``message`` says which: the row cap or the byte cap)."""

    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool
    message: str | None = None


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
                   row_cap: int = 1000, byte_cap: int = 1024 * 1024) -> CypherResult:
    """Run ``query`` read-only with bound ``params``.

    Before it runs, its ``EXPLAIN`` plan is checked
    (:func:`pilar.graph.neo4j_guard.refusal`). At most ``row_cap`` rows and
    ``byte_cap`` bytes of rows (as compact UTF-8 JSON) are returned
    (``truncated`` and ``message`` say when more existed); the server ends
    the transaction after ``timeout`` seconds. Raises :class:`CypherError`:
    ``refused`` for a query the plan check refuses, a client error for
    writes in read mode, syntax errors and the timeout (``timed_out``).
    """
    import neo4j

    def check(tx):
        summary = tx.run(PLANNED + query, params or {}).consume()
        why = refusal(summary.plan, summary.query_type, database or summary.database)
        if why or database:
            return why
        home = tx.run(HOME_DATABASE).consume().database  # a USE clause may name another
        return refusal({"operatorType": f"Plan@{summary.database}"}, "r", home)

    def work(tx):
        result = tx.run(query, params or {})
        rows, size, message = [], 0, None
        for record in result:
            row = {k: to_json_value(v) for k, v in record.items()}
            size += len(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode())
            if len(rows) >= row_cap:
                message = (f"cut at the row cap of {row_cap:,} rows; raise the limit or page "
                           "with SKIP and LIMIT")
            elif size > byte_cap:
                message = (f"cut at the byte cap of {byte_cap:,} bytes of rows "
                           f"(PILAR_CYPHER_MAX_BYTES) after {len(rows):,} rows; return fewer "
                           "or smaller values, or page with SKIP and LIMIT")
            if message:
                break
            rows.append(row)
        return list(result.keys()), rows, message

    planned = False
    try:
        with driver.session(database=database, default_access_mode=neo4j.READ_ACCESS,
                            fetch_size=FETCH_SIZE) as session:
            why = session.execute_read(neo4j.unit_of_work(timeout=timeout)(check))
            planned = True
            if why:
                raise CypherError(f"query refused: {why}", refused=True)
            columns, rows, message = session.execute_read(
                neo4j.unit_of_work(timeout=timeout)(work))
    except neo4j.exceptions.Neo4jError as exc:
        if exc.code in TIMED_OUT:
            raise CypherError(f"query stopped: it ran past its timeout of {timeout:g} s "
                              "(the server ended it)", exc.code) from None
        kind = "refused" if (exc.code or "").startswith("Neo.ClientError") else "failed"
        shift = 0 if planned else len(PLANNED)
        raise CypherError(f"query {kind}: {exc.code}: {_first_line(exc.message, shift)}",
                          exc.code) from None
    except neo4j.exceptions.DriverError as exc:
        raise CypherError(f"query failed: driver error: {exc}") from None
    return CypherResult(columns, rows, message is not None, message)


def _first_line(message: str | None, shift: int) -> str:
    """The first line of a server error ``message``, its position (``line
    L, column C (offset: O)``) moved back by ``shift`` characters on the
    first line: the length of :data:`PLANNED` for an error found while
    planning, so it points into the query as the user wrote it."""
    first = (message or "").splitlines()[0] if message else ""
    match = _POSITION.search(first)
    if not match or not shift:
        return first
    line, column, offset = (int(g) for g in match.groups())
    column = column - shift if line == 1 else column
    return (f"{first[:match.start()]}(line {line}, column {max(column, 1)} "
            f"(offset: {max(offset - shift, 0)})){first[match.end():]}")


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
    documents use (so nothing of another collection shows); ``truncated``
    is set when an entity's assertions or mentions reached ``limit`` (more
    may exist). Returns None when the entity does not exist (or no allowed
    document uses it).
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
    truncated = False
    for _ in range(depth):
        links = graph.entity_links(frontier, limit)
        truncated = truncated or _at_cap(links, frontier, limit)
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
                                               if m[1] in kept], truncated=truncated)


def _at_cap(links, frontier: list[str], limit: int) -> bool:
    """Whether an entity of ``frontier`` has ``limit`` assertions or
    mentions in ``links`` (the store's cap: more may exist)."""
    counts = Counter(e for a in links.assertions for e in {a.subject_entity, a.object_entity}
                     if e in frontier)
    counts.update(Counter((eid, "mention") for eid, _ in links.mentions))
    return any(n >= limit for n in counts.values())


def _used_in(graph, entity_ids: list[str], doc_ids: set[str]) -> set[str]:
    """The entities of ``entity_ids`` that some document of ``doc_ids`` uses."""
    return {eid for eid, docs in graph.entity_documents(entity_ids).items()
            if doc_ids.intersection(docs)}
