"""The MCP server (official ``mcp`` SDK): tools ``search``, ``answer``,
``get_page``, ``cypher``, ``ingest_paths`` and ``get_job``, served over
streamable HTTP at ``/mcp`` by the app and over stdio by ``pilar mcp``.

Agents first: ``search``'s text is the numbered packet (``[1] ...`` per
item, its citation on one short line below: :func:`packet_text`), its
structured content the whole :class:`~pilar.api.models.SearchResponse`.
Each tool's input schema is the JSON schema of the request model REST
uses (:func:`~pilar.api.models.search_request` and the rest, limits from
``Settings``, unknown arguments refused), and arguments are validated by
that model. A refused call is a JSON-RPC error (never a tool result):
``code`` -32602 (invalid params) for a 4xx problem, -32603 for a 5xx one,
``message`` the problem's detail, ``data`` the problem (the REST body of
the same request, :func:`pilar.api.problems.described`). Tools are listed
only when they can work for the caller: ``answer`` with a reader
configured, ``cypher`` on Neo4j for a key not limited to collections,
``ingest_paths`` (queue an ingest job of server files under
``PILAR_INGEST_ROOTS``, as ``POST /v1/documents/paths``) when roots are
configured, and ``get_job`` (a job's record, as ``GET /v1/jobs/{id}``).

The tools are the REST routes' own code, so scoping and the sources shown
(never a server path) are the same. Over HTTP every tool call is
authenticated with the request's headers (the ``/mcp`` gate refuses calls
without a valid key first); over stdio the caller is the local user and
sees every collection.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field, create_model

from pilar import Pilar
from pilar.api import scoping
from pilar.api.auth import OPEN, Access, Keyring, presented
from pilar.api.jobs import JobStore
from pilar.api.models import (AnswerResponse, CypherRequest, CypherResponse, Job, JobAccepted,
                              PageOut, PathsRequest, SearchResponse, answer_request,
                              search_request)
from pilar.api.paths import ServerPaths
from pilar.api.problems import described, problem_body
from pilar.api.ratelimit import RateLimiter, caller_id
from pilar.graph.neo4j_guard import RULES

INSTRUCTIONS = ("pilar searches ingested documents and returns cited evidence: call `search` "
                "with the question; its text is a packet of numbered excerpts ([1] ..., each "
                "followed by its source), cite them by their [n] (or call `answer` for pilar's "
                "reader's cited answer when it is listed); open a page with `get_page`; "
                "explore the graph with read-only `cypher` when it is listed; queue files on "
                "the server with `ingest_paths` and follow the job with `get_job`.")


def packet_text(response: SearchResponse) -> str:
    """The packet as an agent reads it: per item ``[n] text`` and, on the
    next line, ``    -- file, page N, table T row R`` (its citation in one
    short line: the section path is in the packet's own headings, the rest
    in the structured content); items numbered from 1 as ``answer`` cites
    them. An empty packet says so."""
    items = response.packet.items
    if not items:
        return "no evidence found for this question"
    return "\n".join(f"[{n}] {item.text}\n    -- {_short(item.citation)}"
                     for n, item in enumerate(items, 1))


def _short(c) -> str:
    """``report.pdf, page 3, table 0 row 4 col 1`` of a citation."""
    cell = "" if c.table_index is None else f", table {c.table_index}"
    cell += f" row {c.row}" if c.row is not None and cell else ""
    cell += f" col {c.col}" if c.col is not None and cell else ""
    return f"{PurePath(c.source).name}, page {c.page}{cell}"


class PageRequest(BaseModel):
    """``get_page``'s arguments (``limit`` is added with the pages route's bounds)."""

    model_config = ConfigDict(extra="forbid")

    page_id: str = Field(min_length=1, max_length=1000,
                         description="a page id `doc_id:number`, as cited by `search`")
    offset: int = Field(0, ge=0, description="index of the first support returned")


class JobRequest(BaseModel):
    """``get_job``'s arguments."""

    model_config = ConfigDict(extra="forbid")

    job_id: str = Field(min_length=1, max_length=200,
                        description="a job id, as `ingest_paths` (or an upload) returned it")


class _Arguments(ArgModelBase):
    """The SDK's argument model of every pilar tool: any arguments, passed
    whole to the tool, whose own request model checks them (so a refusal is
    a JSON-RPC error, not the SDK's tool result)."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def refusal(exc: Exception) -> MCPError:
    """The JSON-RPC error of a refused or failed call (see the module doc)."""
    status, detail = described(exc)
    return MCPError(INVALID_PARAMS if status < 500 else INTERNAL_ERROR, detail,
                    problem_body(status, detail))


class PilarMCP(MCPServer):
    """:class:`MCPServer` whose tool list depends on the caller: a tool is
    listed when ``listed(name, headers)`` says it can work (headers None
    over stdio)."""

    def __init__(self, listed: Callable[[str, Any], bool], **kwargs):
        super().__init__(**kwargs)
        self._listed = listed

    async def _handle_list_tools(self, ctx, params):
        result = await super()._handle_list_tools(ctx, params)
        headers = getattr(ctx.request, "headers", None) if ctx is not None else None
        result.tools = [t for t in result.tools if self._listed(t.name, headers)]
        return result


def build_mcp(pilar: Pilar, keyring: Keyring, paths: ServerPaths,
              limiter: RateLimiter | None = None,
              jobs: Callable[[], JobStore] | None = None) -> MCPServer:
    """An :class:`mcp.server.mcpserver.MCPServer` exposing pilar's tools,
    sources shown as ``paths`` shows them; over HTTP the ``search``,
    ``answer``, ``cypher`` and ``ingest_paths`` calls count against
    ``limiter`` (the REST routes' own, so a caller has one budget per
    operation). ``jobs()`` gives the job store of ``ingest_paths`` and
    ``get_job`` (not listed without it); a queued job is run by an ingest
    worker (``pilar serve``'s, or a ``pilar worker`` on the same job store)."""
    from pilar.api.routes.answer import ANSWER_DESCRIPTION, run_answer
    from pilar.api.routes.graph import run_cypher
    from pilar.api.routes.pages import MAX_SUPPORTS_LIMIT, SUPPORTS_LIMIT, page_out
    from pilar.api.routes.search import SEARCH_DESCRIPTION, run_search
    from pilar.llm import Endpoint

    settings = pilar.settings
    try:
        Endpoint.reader(settings)
        has_reader = True
    except Exception:  # noqa: BLE001 - no reader configured: `answer` is not listed
        has_reader = False

    def access(headers) -> Access | None:
        return OPEN if headers is None else keyring.authenticate(headers)

    def listed(name: str, headers) -> bool:
        if name == "answer":
            return has_reader
        if name == "cypher":
            found = access(headers)
            return settings.graph == "neo4j" and found is not None and found.unlimited
        if name in ("ingest_paths", "get_job"):
            return jobs is not None and (name == "get_job" or bool(paths.roots))
        return True

    # warnings and errors only: the SDK's INFO records (a line per request) are noise
    server = PilarMCP(listed, name="pilar", instructions=INSTRUCTIONS, log_level="WARNING")

    def headers_of(ctx: Context):
        try:
            return ctx.headers
        except ValueError:  # no request context: an in-process call (stdio)
            return None

    def owner(ctx: Context) -> str:
        """Who the call is (as REST's :func:`pilar.api.deps.owner`; the local
        user over stdio): the owner of the jobs it queues, the unit of rate limits."""
        headers = headers_of(ctx)
        if headers is None:
            return caller_id(None, "local")
        client = getattr(ctx.request_context.request, "client", None)
        return caller_id(presented(headers) if keyring.enabled else None,
                         client.host if client else None)

    def caller(ctx: Context, operation: str | None = None) -> Access:
        """The call's access; with ``operation``, counted against the rate limit."""
        headers = headers_of(ctx)
        found = access(headers)
        if found is None:
            raise MCPError(INVALID_PARAMS, "a valid API key is needed",
                           problem_body(401, "a valid API key is needed"))
        if headers is not None and operation and limiter is not None:
            refused = limiter.refusal(operation, owner(ctx))
            if refused:
                raise MCPError(INVALID_PARAMS, refused[0], problem_body(429, refused[0]))
        return found

    def tool(name: str, description: str, model: type[BaseModel], output: type[BaseModel],
             run: Callable[[BaseModel, Context], Any]) -> None:
        """Register tool ``name``: arguments checked by ``model`` (its JSON
        schema is the input schema), ``run(request, ctx)``'s result as
        structured content (``output``'s schema) and as JSON text unless
        ``run`` returns a :class:`CallToolResult` itself."""
        def call(arguments: dict, ctx: Context):
            try:
                return run(model.model_validate(arguments), ctx)
            except MCPError:
                raise
            except Exception as exc:  # noqa: BLE001 - every refusal becomes a JSON-RPC error
                raise refusal(exc) from None

        call.__name__ = name
        server.add_tool(call, name=name, description=description)
        registered = server._tool_manager.get_tool(name)
        registered.fn_metadata.arg_model = _Arguments
        registered.parameters = model.model_json_schema()
        registered.parameters.pop("title", None)
        registered.fn_metadata.output_model = output
        registered.fn_metadata.output_schema = output.model_json_schema()

    def search(req, ctx: Context) -> CallToolResult:
        response = run_search(pilar, caller(ctx, "search"), req, paths.shown)
        return CallToolResult(content=[TextContent(type="text", text=packet_text(response))],
                              structured_content=response.model_dump(mode="json"))

    def answer(req, ctx: Context) -> AnswerResponse:
        return run_answer(pilar, caller(ctx, "answer"), req, paths.shown)

    def get_page(req: PageRequest, ctx: Context) -> PageOut:
        found = scoping.page(pilar, caller(ctx), req.page_id)
        if found is None:
            raise MCPError(INVALID_PARAMS, "no such page", problem_body(404, "no such page"))
        return page_out(found, pilar.row_headers(req.page_id), req.offset, req.limit)

    def cypher(req: CypherRequest, ctx: Context) -> CypherResponse:
        if not caller(ctx, "cypher").unlimited:
            detail = "cypher needs a key that is not limited to collections"
            raise MCPError(INVALID_PARAMS, detail, problem_body(403, detail))
        return run_cypher(pilar, req)

    def ingest_paths(req: PathsRequest, ctx: Context) -> JobAccepted:
        from pilar.api.routes.documents import paths_job

        return paths_job(jobs(), paths, caller(ctx, "upload"), owner(ctx), req)

    def get_job(req: JobRequest, ctx: Context) -> Job:
        job = jobs().get(req.job_id)
        if job is None or not scoping.job_visible(caller(ctx), job):
            raise MCPError(INVALID_PARAMS, "no such job", problem_body(404, "no such job"))
        return job

    page_model = create_model("PageRequest", __base__=PageRequest, limit=(int, Field(
        SUPPORTS_LIMIT, ge=1, le=MAX_SUPPORTS_LIMIT,
        description=f"supports returned at most (1 to {MAX_SUPPORTS_LIMIT})")))
    tool("search", SEARCH_DESCRIPTION, search_request(settings), SearchResponse, search)
    tool("answer", ANSWER_DESCRIPTION, answer_request(settings, streamed=False), AnswerResponse,
         answer)
    tool("get_page", "A page (id `doc_id:number`, as cited by `search`): its text and "
                     "supports with provenance (section path, bbox in PDF points, table cell), "
                     "`limit` supports from `offset`; `next_offset` is where the next slice "
                     "starts, null at the end.", page_model, PageOut, get_page)
    tool("cypher", "Run a READ-ONLY Cypher query on pilar's Neo4j graph (Document, Page, "
                   "Support, Provenance, Assertion, Entity nodes); rows as JSON, cut at `limit` "
                   "rows and at the server's byte cap (`message` says which); "
                   f"{RULES}, else it is refused.", CypherRequest, CypherResponse, cypher)
    tool("ingest_paths", "Queue an ingest job of files or folders on the server (under its "
                         "ingest roots open to this key) into `collection`; returns the job "
                         "id at once. Follow it with `get_job`.", PathsRequest, JobAccepted,
         ingest_paths)
    tool("get_job", "A job's state (queued, running, cancelling, done, failed, cancelled), "
                    "counts, and each file's status, reason and doc_id.", JobRequest, Job,
         get_job)
    return server
