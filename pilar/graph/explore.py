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
