"""``POST /v1/search``, the agent tool, and ``GET /v1/tools``, its OpenAI
function-calling schema. The body is the request model of every face
(:func:`pilar.api.models.search_request`, limits from ``Settings``)."""

# no ``from __future__ import annotations``: FastAPI reads the body model
# from the route's annotations, and the model is built per settings.

from fastapi import APIRouter, Response
from pydantic import BaseModel

from pilar.api import scoping
from pilar.api.deps import RATE_LIMITED, Caller, PathsDep, PilarDep, rate_limit
from pilar.api.models import Problem, SearchResponse, search_request, search_response
from pilar.config import Settings

SEARCH_DESCRIPTION = (
    "Search pilar's documents for evidence. Returns a packet of numbered, cited excerpts "
    "([n] text, then its source: document, page, section path, bbox or table cell) that "
    "fits budget_tokens, and the ranked pages; cite excerpts by their [n].")


def openai_tools(settings: Settings) -> list[dict]:
    """The OpenAI function-calling schema of the ``search`` tool (its
    parameters are the search request's JSON schema, with ``settings``' limits)."""
    schema = search_request(settings).model_json_schema()
    schema.pop("title", None)
    return [{"type": "function",
             "function": {"name": "search", "description": SEARCH_DESCRIPTION,
                          "parameters": schema}}]


def run_search(pilar, caller, req: BaseModel, shown) -> SearchResponse:
    """One search for ``caller`` (shared by REST and MCP) from a
    :func:`~pilar.api.models.search_request` instance, sources shown
    through ``shown`` (:meth:`pilar.api.paths.ServerPaths.shown`)."""
    return search_response(scoping.search(pilar, caller, req), shown)


def routes(settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["search"],
                       responses={401: {"model": Problem}, 422: {"model": Problem}})
    SearchRequest = search_request(settings)

    @router.post("/search", response_model=SearchResponse, dependencies=[rate_limit("search")],
                 responses={**RATE_LIMITED, 404: {"model": Problem, "description":
                            "the collections or documents named hold no document"}})
    def search(pilar: PilarDep, caller: Caller, paths: PathsDep,
               req: SearchRequest) -> Response:
        """Rank pages and pack cited evidence within ``budget_tokens`` (PILAR §3.4-3.5)."""
        # the JSON is written here, on the search's thread: FastAPI would check the
        # response model again, on another turn of the thread pool
        found = run_search(pilar, caller, req, paths.shown)
        return Response(found.model_dump_json(by_alias=True), media_type="application/json")

    @router.get("/tools")
    def tools(caller: Caller) -> list[dict]:
        """The ``search`` tool as an OpenAI function-calling schema."""
        return openai_tools(settings)

    return router
