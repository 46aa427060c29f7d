"""What a read-only Cypher query of ``pilar cypher`` / ``/v1/cypher`` / the MCP
``cypher`` tool may do, checked on Neo4j's own plan before it runs.

The query is planned with ``EXPLAIN`` (Neo4j's parser and planner: nothing
runs, no file or URL is read) and refused unless the plan only reads the
session's graph: no ``LOAD CSV``, no procedure outside :data:`READ_PROCEDURES`,
no ``SHOW ...`` / ``TERMINATE ...`` / administration or schema command, no
write, no other database, and nothing but the evidence graph: no node of
:data:`INTERNAL_LABELS` (the server's job records, the schema's versions)
named in a label expression, and no node read without a label (an
``AllNodesScan`` or a seek by id reaches those nodes too; the internal
nodes have no relationships, so a node reached along one is evidence).
Subqueries planned inside an expression appear in their operator's details
only, so those are read too. The server's own
configuration closes ``LOAD CSV`` a second time (file URLs off, every address
blocked for URL loading: ``tests/servers/neo4j`` and ``docker-compose.yml``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

READ_PROCEDURES = frozenset({
    "db.labels", "db.relationshipTypes", "db.propertyKeys", "db.schema.visualization",
    "db.index.fulltext.queryNodes", "db.index.fulltext.queryRelationships",
})
"""Procedures a query may call: they read the graph's schema or a full-text index."""

INTERNAL_LABELS = frozenset({"Job", "JobQueue", "SchemaMigration"})
"""Labels of nodes that are not evidence: job records (owner digests, server
paths: :mod:`pilar.api.job_store_neo4j`) and applied migrations. They have
no relationships."""

UNLABELLED = "a node must be matched by its label (MATCH (n:Page) ...), not by id or unlabelled"
UNLABELLED_READS = ("AllNodesScan", "NodeByIdSeek", "NodeByElementIdSeek")
"""Plan operators (and their ``Partitioned`` forms) that read nodes of any
label: refused with :data:`UNLABELLED`."""

LOAD_CSV = "LOAD CSV is not allowed (it reads files and URLs)"
IN_TRANSACTIONS = "CALL { ... } IN TRANSACTIONS is not allowed (it commits as it goes)"
RULES = ("a query runs only when its plan only reads the evidence graph (no LOAD CSV, "
         "no SHOW, TERMINATE or administration command, no write, no procedure but "
         + ", ".join(sorted(READ_PROCEDURES)) + ", every node matched by its label, no "
         "label of the server's own records: " + ", ".join(sorted(INTERNAL_LABELS)) + ")")
"""The rules in one sentence, for the faces' help texts."""

REFUSED_OPERATORS = {"LoadCSV": LOAD_CSV,
                     "AdministrationCommand": "administration commands are not allowed",
                     "TransactionApply": IN_TRANSACTIONS, "TransactionForeach": IN_TRANSACTIONS}
"""Plan operators refused outright, and the reason given."""

REFUSED_PREFIXES = {"Show": "SHOW commands are not allowed",
                    "Terminate": "TERMINATE commands are not allowed"}
"""Operator name prefixes refused (``ShowProcedures``, ``ShowSettings``,
``TerminateTransactions``), and the reason given."""

QUERY_TYPES = {"w": "writes are not allowed", "rw": "writes are not allowed",
               "s": "schema and administration commands are not allowed"}
"""Neo4j's query types other than ``r`` (read only), and the reason given."""

_CALLED = re.compile(r"^([\w.]+)\(")
"""The procedure name at the start of a ``ProcedureCall`` operator's details."""
_NESTED_CALL = re.compile(r"ResolvedCall\(([\w.]+)\(")
"""A procedure called inside an expression subquery (``COLLECT { CALL ... }``)."""
_NESTED_LOAD = re.compile(r"\bLOAD\s+CSV\b", re.IGNORECASE)
_LABELS = re.compile(r":((?:[!&|%]*`?\w+`?)+)")
"""A label (or relationship type) expression in an operator's details:
``n:Page|Job``, ``n:Page&!Job``, ``(:Job)``, ``INDEX j:Job(job_id)`` (no
space after the colon, unlike a map's ``key: value``)."""
_NAME = re.compile(r"\w+")
_UNLABELLED = re.compile(rf"\b(?:Partitioned)?(?:{'|'.join(UNLABELLED_READS)})\b")


def _operators(plan: dict) -> Iterator[tuple[str, str, str]]:
    """``(operator, database, details)`` of every operator of ``plan`` (the
    driver's ``summary.plan`` dict), depth first."""
    name, _, db = plan.get("operatorType", "").partition("@")
    yield name, db, str(plan.get("args", {}).get("Details") or "")
    for child in plan.get("children", []):
        yield from _operators(child)


def refusal(plan: dict | None, query_type: str | None, database: str | None) -> str | None:
    """Why the ``EXPLAIN`` ``plan`` of a query (``summary.plan``, its
    ``summary.query_type`` and ``summary.database``) is refused, or None when
    it only reads ``database``. One line naming what was found."""
    for name, db, details in _operators(plan or {}):
        if name in REFUSED_OPERATORS:
            return REFUSED_OPERATORS[name]
        for prefix, why in REFUSED_PREFIXES.items():
            if name.startswith(prefix):
                return why
        if db and database and db != database:
            return f"the query reads database {db!r}; only {database!r} may be read"
        called = _CALLED.findall(details) if name == "ProcedureCall" else []
        for proc in called + _NESTED_CALL.findall(details):
            if proc not in READ_PROCEDURES:
                return (f"procedure {proc} is not allowed (allowed: "
                        f"{', '.join(sorted(READ_PROCEDURES))})")
        if _NESTED_LOAD.search(details):
            return LOAD_CSV
        if _UNLABELLED.fullmatch(name) or _UNLABELLED.search(details):
            return UNLABELLED
        internal = sorted({label for expr in _LABELS.findall(details)
                           for label in _NAME.findall(expr)} & INTERNAL_LABELS)
        if internal:
            return (f"label {internal[0]} is not part of the evidence graph (its nodes are "
                    f"the server's own records)")
    return QUERY_TYPES.get(query_type or "r")
