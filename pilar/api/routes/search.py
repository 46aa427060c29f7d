"""``POST /v1/search``, the agent tool, and ``GET /v1/tools``, its OpenAI
function-calling schema."""

from __future__ import annotations

from fastapi import APIRouter

from pilar.api import scoping
from pilar.api.deps import RATE_LIMITED, Caller, PathsDep, PilarDep, rate_limit
from pilar.api.models import Problem, SearchRequest, SearchResponse, search_response
from pilar.config import Settings

SEARCH_DESCRIPTION = (
    "Search pilar's documents for evidence. Returns the best pages and a packet of cited "
    "excerpts (document, page, section path, bbox or table cell for every line) that fits "
    "budget_tokens. Cite packet lines by their [n] markers.")


def openai_tools() -> list[dict]:
    """The OpenAI function-calling schema of the ``search`` tool (its
    parameters are :class:`SearchRequest`'s JSON schema)."""
    schema = SearchRequest.model_json_schema()
    schema.pop("title", None)
    return [{"type": "function",
             "function": {"name": "search", "description": SEARCH_DESCRIPTION,
                          "parameters": schema}}]


def run_search(pilar, caller, req: SearchRequest, shown) -> SearchResponse:
    """One search for ``caller`` (shared by REST and MCP), sources shown
    through ``shown`` (:meth:`pilar.api.paths.ServerPaths.shown`)."""
    result = scoping.search(pilar, caller, req.query, req.budget_tokens, req.k, req.profile,
                            req.doc_ids, req.collections)
    return search_response(result, shown)


def routes(settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["search"],
                       responses={401: {"model": Problem}, 422: {"model": Problem}})

    @router.post("/search", response_model=SearchResponse, dependencies=[rate_limit("search")],
                 responses=RATE_LIMITED)
    def search(pilar: PilarDep, caller: Caller, paths: PathsDep,
               req: SearchRequest) -> SearchResponse:
        """Rank pages and pack cited evidence within ``budget_tokens`` (PILAR §3.4-3.5)."""
        return run_search(pilar, caller, req, paths.shown)

    @router.get("/tools")
    def tools(caller: Caller) -> list[dict]:
        """The ``search`` tool as an OpenAI function-calling schema."""
        return openai_tools()

    return router
