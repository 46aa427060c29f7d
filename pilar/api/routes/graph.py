"""Graph exploration: ``POST /v1/cypher`` (read-only, Neo4j only, unlimited
keys) and ``/v1/entities`` (search, get, neighbourhood) on every graph backend."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from pilar.api import scoping
from pilar.api.deps import RATE_LIMITED, Caller, PilarDep, Unlimited, rate_limit
from pilar.api.models import (CypherRequest, CypherResponse, EntityList, EntityOut,
                              NeighborhoodOut, PageRef, Problem)
from pilar.config import Settings
from pilar.graph.explore import MAX_DEPTH
from pilar.graph.neo4j_guard import RULES
from pilar.parts import split_page_id


def neighborhood_out(found, titles: dict[str, str] | None = None) -> NeighborhoodOut:
    """The response model of a :class:`~pilar.model.Neighborhood`; ``titles``
    (``{doc_id: title}``) names the pages' documents."""
    pages = []
    for pid in found.pages:
        doc_id, number = split_page_id(pid)
        pages.append(PageRef(page_id=pid, doc_id=doc_id, number=number,
                             title=(titles or {}).get(doc_id, "")))
    return NeighborhoodOut.model_validate({
        "entities": found.entities, "assertions": found.assertions, "same_as": found.same_as,
        "supports": found.supports, "pages": pages, "mentions": found.mentions,
        "truncated": found.truncated})


def run_cypher(pilar, req: CypherRequest) -> CypherResponse:
    """One read-only query (REST and MCP); 501 on the embedded store, 422 for
    a query refused before it runs (LOAD CSV, a procedure outside the
    allow-list, SHOW and administration commands, a write: see
    :mod:`pilar.graph.neo4j_guard`), one the server refuses (a syntax error)
    or one the server ended at its timeout; 503 when the server fails
    (:class:`~pilar.errors.CypherError`'s ``status``); 501 on the embedded
    graph (:class:`~pilar.errors.NotSupportedError`)."""
    result = pilar.cypher(req.query, req.params, timeout=req.timeout, row_cap=req.limit)
    return CypherResponse(columns=result.columns, rows=result.rows, truncated=result.truncated,
                          message=result.message)


def routes(settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["graph"],
                       responses={401: {"model": Problem}, 404: {"model": Problem},
                                  422: {"model": Problem}})

    @router.post("/cypher", response_model=CypherResponse, dependencies=[rate_limit("cypher")],
                 responses={403: {"model": Problem}, 501: {"model": Problem}, **RATE_LIMITED},
                 description=f"Run a read-only Cypher query: {RULES}, else 422. A query past "
                             "`timeout` is ended by the server (422); rows are cut at `limit` "
                             "and at the server's byte cap (`message` says which). Needs a key "
                             "not limited to collections; 501 on the embedded store.")
    def cypher(pilar: PilarDep, caller: Unlimited, req: CypherRequest) -> CypherResponse:
        return run_cypher(pilar, req)

    @router.get("/entities", response_model=EntityList)
    def search_entities(pilar: PilarDep, caller: Caller,
                        q: Annotated[str, Query(min_length=1, max_length=500)],
                        limit: Annotated[int, Query(ge=1, le=200)] = 20) -> EntityList:
        """Entities whose name or aliases match ``q`` (full-text), best first."""
        found = scoping.entities(pilar, caller, q, limit)
        return EntityList(items=[EntityOut.model_validate(e) for e in found])

    @router.get("/entities/{entity_id}", response_model=EntityOut)
    def get_entity(pilar: PilarDep, caller: Caller, entity_id: str) -> EntityOut:
        found = scoping.entity(pilar, caller, entity_id)
        if found is None:
            raise HTTPException(404, "no such entity")
        return EntityOut.model_validate(found)

    @router.get("/entities/{entity_id}/neighborhood", response_model=NeighborhoodOut)
    def get_neighborhood(pilar: PilarDep, caller: Caller, entity_id: str,
                         depth: Annotated[int, Query(ge=1, le=MAX_DEPTH)] = 1) -> NeighborhoodOut:
        """Entities, assertions, SAME_AS links, supports and pages within
        ``depth`` hops (assertions and SAME_AS links are the hops)."""
        found = scoping.neighborhood(pilar, caller, entity_id, depth)
        if found is None:
            raise HTTPException(404, "no such entity")
        docs = pilar.graph.documents(sorted({s.doc_id for s in found.supports}))
        return neighborhood_out(found, {d.doc_id: d.title for d in docs})

    return router
