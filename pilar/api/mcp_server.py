"""The MCP server (official ``mcp`` SDK): tools ``search``, ``answer``,
``get_page`` and ``cypher``, served over streamable HTTP at ``/mcp`` by the
app and over stdio by ``pilar mcp``.

The tools are the REST routes' own code (:func:`~pilar.api.routes.search.run_search`,
:func:`~pilar.api.routes.answer.run_answer`, :func:`~pilar.api.routes.graph.run_cypher`,
the scoping of :mod:`pilar.api.scoping`), so validation, limits and
collection scoping and the sources shown (never a server path) are the same. Over HTTP every
tool call is authenticated with the request's
headers (the ``/mcp`` gate refuses calls without a valid key first); over
stdio the caller is the local user and sees every collection.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from pilar import Pilar
from pilar.api import scoping
from pilar.api.auth import OPEN, Access, Keyring, presented
from pilar.api.paths import ServerPaths
from pilar.api.models import (AnswerRequest, AnswerResponse, CypherRequest, CypherResponse,
                              PageOut, SearchRequest, SearchResponse)
from pilar.api.ratelimit import RateLimiter, caller_id
from pilar.errors import LLMError, ReaderNotConfiguredError
from pilar.graph.neo4j_guard import RULES

INSTRUCTIONS = ("pilar searches ingested documents and returns cited evidence packets: call "
                "`search` with the question, cite packet lines by their [n] markers (or call "
                "`answer` for pilar's reader's cited answer when it has one), open a "
                "page with `get_page`, explore the graph with read-only `cypher` (Neo4j only).")


def build_mcp(pilar: Pilar, keyring: Keyring, paths: ServerPaths,
              limiter: RateLimiter | None = None) -> MCPServer:
    """An :class:`mcp.server.mcpserver.MCPServer` exposing pilar's tools,
    sources shown as ``paths`` shows them; over HTTP the ``search``,
    ``answer`` and ``cypher`` calls count against ``limiter`` (the REST
    routes' own, so a caller has one budget per operation)."""
    from pilar.api.routes.answer import ANSWER_DESCRIPTION, run_answer
    from pilar.api.routes.graph import run_cypher
    from pilar.api.routes.pages import MAX_SUPPORTS_LIMIT, SUPPORTS_LIMIT, page_out
    from pilar.api.routes.search import SEARCH_DESCRIPTION, run_search

    # warnings and errors only: the SDK's INFO records (a line per request) are noise
    server = MCPServer("pilar", instructions=INSTRUCTIONS, log_level="WARNING")

    def caller(ctx: Context, operation: str | None = None) -> Access:
        """The call's access; with ``operation``, counted against the rate limit."""
        try:
            headers = ctx.headers
        except ValueError:  # no request context: an in-process call
            headers = None
        if headers is None:  # stdio: the local user
            return OPEN
        found = keyring.authenticate(headers)
        if found is None:
            raise ToolError("a valid API key is needed")
        if operation and limiter is not None:
            client = getattr(ctx.request_context.request, "client", None)
            who = caller_id(presented(headers) if keyring.enabled else None,
                            client.host if client else None)
            refused = limiter.refusal(operation, who)
            if refused:
                raise ToolError(refused[0])
        return found

    def refuse(exc: Exception) -> ToolError:
        if isinstance(exc, ValidationError):
            e = exc.errors()[0]
            return ToolError(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}")
        detail = getattr(exc, "detail", None) or str(exc)
        return ToolError(str(detail).splitlines()[0])

    @server.tool(description=SEARCH_DESCRIPTION)
    def search(query: str, ctx: Context, budget_tokens: int = 4500, k: int | None = None,
               profile: str | None = None, doc_ids: list[str] | None = None,
               collections: list[str] | None = None) -> SearchResponse:
        try:
            req = SearchRequest(query=query, budget_tokens=budget_tokens, k=k, profile=profile,
                                doc_ids=doc_ids, collections=collections)
            return run_search(pilar, caller(ctx, "search"), req, paths.shown)
        except (ValidationError, ValueError, TypeError) as exc:
            raise refuse(exc) from None

    @server.tool(description=ANSWER_DESCRIPTION)
    def answer(question: str, ctx: Context, budget_tokens: int = 4500, k: int | None = None,
               profile: str | None = None, doc_ids: list[str] | None = None,
               collections: list[str] | None = None) -> AnswerResponse:
        try:
            req = AnswerRequest(question=question, budget_tokens=budget_tokens, k=k,
                                profile=profile, doc_ids=doc_ids, collections=collections)
            return run_answer(pilar, caller(ctx, "answer"), req, paths.shown)
        except (ValidationError, ValueError, TypeError, ReaderNotConfiguredError) as exc:
            raise refuse(exc) from None
        except LLMError as exc:
            raise ToolError(f"reader failed: {exc}") from None

    @server.tool(description="A page (id `doc_id:number`, as cited by `search`): its text and "
                             "supports with provenance (section path, bbox in PDF points, "
                             f"table cell), `limit` supports (1 to {MAX_SUPPORTS_LIMIT}) from "
                             "`offset`; `next_offset` is where the next slice starts, null "
                             "at the end.")
    def get_page(page_id: str, ctx: Context, offset: int = 0,
                 limit: int = SUPPORTS_LIMIT) -> PageOut:
        if offset < 0 or not 1 <= limit <= MAX_SUPPORTS_LIMIT:
            raise ToolError(f"offset must be 0 or more and limit 1 to {MAX_SUPPORTS_LIMIT}")
        found = scoping.page(pilar, caller(ctx), page_id)
        if found is None:
            raise ToolError("no such page")
        return page_out(found, pilar.row_headers(page_id), offset, limit)

    @server.tool(description="Run a READ-ONLY Cypher query on pilar's Neo4j graph (Document, "
                             "Page, Support, Provenance, Assertion, Entity nodes); rows as JSON, "
                             "cut at `limit` rows and at the server's byte cap (`message` says "
                             f"which); {RULES}, else it is refused.")
    def cypher(query: str, ctx: Context, params: dict[str, Any] | None = None,
               limit: int = 1000) -> CypherResponse:
        if not caller(ctx, "cypher").unlimited:
            raise ToolError("cypher needs a key that is not limited to collections")
        try:
            return run_cypher(pilar, CypherRequest(query=query, params=params or {}, limit=limit))
        except Exception as exc:  # noqa: BLE001 - every refusal becomes one clean line
            raise refuse(exc) from None

    return server
