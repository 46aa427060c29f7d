"""The FastAPI app: ``create_app(pilar)`` wires the routers, keys, limits,
errors, the job store, the ingest worker process and the MCP endpoint
around one :class:`~pilar.Pilar`."""

from __future__ import annotations

import contextlib
import logging
import threading

import anyio
from fastapi import FastAPI
from starlette.routing import Route

from pilar import Pilar, __version__
from pilar.api import problems
from pilar.api.auth import Keyring, parse_keys
from pilar.api.ingest_service import start_worker, stop_worker
from pilar.api.job_stores import open_job_store
from pilar.api.jobs import EvalRunner
from pilar.api.mcp_server import build_mcp
from pilar.api.paths import ServerPaths
from pilar.api.ratelimit import RateLimiter
from pilar.api.routes import answer, documents, evaluation, graph, health, pages, search, web

ROUTERS = [health.routes, documents.routes, search.routes, answer.routes, evaluation.routes,
           pages.routes, graph.routes, web.routes]
"""One router per area: adding an area is adding its ``routes`` here."""

log = logging.getLogger("pilar.api")


KEY_NEEDED = "a valid API key is needed (Authorization: Bearer KEY or X-API-Key: KEY)"


class McpGate:
    """ASGI wrapper of the MCP endpoint: 401 unless the request's key is
    valid (when keys are configured). An MCP client (it accepts
    ``text/event-stream``) gets the refusal as a JSON-RPC error its SDK
    shows (``message`` the detail, ``data`` the problem); anyone else
    problem+json."""

    def __init__(self, app, keyring: Keyring):
        self.app = app
        self.keyring = keyring

    async def __call__(self, scope, receive, send):
        from starlette.datastructures import Headers

        headers = Headers(scope=scope)
        if self.keyring.authenticate(headers) is None:
            challenge = {"WWW-Authenticate": "Bearer"}
            if "text/event-stream" in headers.get("accept", ""):
                from fastapi.responses import JSONResponse

                response = JSONResponse({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32600, "message": KEY_NEEDED,
                    "data": problems.problem_body(401, KEY_NEEDED)}},
                    status_code=401, headers=challenge)
            else:
                response = problems.problem(401, KEY_NEEDED, headers=challenge)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class ModelLoad:
    """The embedding model of queries, loaded in a thread when the server
    starts (``/readyz`` says ``loading`` until it is): :attr:`problem` is
    None once loaded, else ``"loading"`` or why it failed (one line)."""

    def __init__(self, pilar: Pilar):
        self.problem: str | None = "loading"
        self._thread = threading.Thread(target=self._load, args=(pilar,), name="pilar-model",
                                        daemon=True)

    def start(self) -> "ModelLoad":
        self._thread.start()
        return self

    def _load(self, pilar: Pilar) -> None:
        try:
            pilar.embedder.query("ready")  # the query encoder, as a search embeds
            self.problem = None
        except Exception as exc:  # noqa: BLE001 - reported by /readyz, and logged
            self.problem = f"failed ({(str(exc).splitlines() or [type(exc).__name__])[0]})"
            log.error("the embedding model could not be loaded: %s", self.problem)


class PilarAPI(FastAPI):
    """FastAPI whose outermost layer turns plain-text error answers of the
    layers FastAPI puts around user middleware (the 413 of the body limit)
    into problem+json."""

    def build_middleware_stack(self):
        return problems.PlainErrorsAsProblems(super().build_middleware_stack())

    def openapi(self) -> dict:
        """The schema with every error answer documented as it is sent:
        ``application/problem+json`` (:func:`pilar.api.problems.document_errors`)."""
        if self.openapi_schema is None:
            self.openapi_schema = problems.document_errors(super().openapi())
        return self.openapi_schema


WILDCARDS = ("", "0.0.0.0", "::")
"""Bind addresses that name every interface rather than one host."""


def served_hosts(host: str) -> str:
    """The ``PILAR_API_ALLOWED_HOSTS`` entry of the address ``pilar serve
    --host`` binds (``10.0.0.5`` -> ``10.0.0.5:*``, ``::1`` -> ``[::1]:*``);
    empty for a wildcard address (every interface names no one host)."""
    if host in WILDCARDS:
        return ""
    return f"[{host}]:*" if ":" in host else f"{host}:*"


def _mcp_security(settings):
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = [h.strip() for h in settings.api_allowed_hosts.split(",") if h.strip()]
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    local = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    return TransportSecuritySettings(
        allowed_hosts=local + hosts,
        allowed_origins=[f"http://{h}" for h in local] + [f"http{s}://{h}" for h in hosts
                                                          for s in ("", "s")])


def create_app(pilar: Pilar) -> FastAPI:
    """The REST API (``/v1``, ``/healthz``, ``/readyz``, OpenAPI at ``/docs``)
    and the MCP endpoint (``/mcp``) serving ``pilar``.

    Settings come from ``pilar.settings``: ``PILAR_API_KEYS``,
    ``PILAR_INGEST_ROOTS``, ``PILAR_API_CORS_ORIGINS``, the body and upload
    limits, ``PILAR_API_RATE_LIMIT``, ``PILAR_API_IMAGE_CACHE_BYTES``,
    ``PILAR_API_INGEST_WORKER``. Starting the app (its lifespan) marks the
    evaluations a stopped server left unfinished failed (ingest jobs are
    resumed by a worker once their lease runs out), starts the ingest
    worker process (:mod:`pilar.api.ingest_service`,
    which it stops on shutdown), the evaluation thread, and the loading of
    the query embedding model (``/readyz`` waits for it). Raises
    :class:`~pilar.errors.ConfigError` for a malformed ``PILAR_API_KEYS`` or
    ``PILAR_INGEST_ROOTS``."""
    settings = pilar.settings
    keyring = Keyring(parse_keys(settings.api_keys))
    paths = ServerPaths.of(settings)
    limiter = RateLimiter(settings.api_rate_limit)
    mcp = build_mcp(pilar, keyring, paths, limiter, jobs=lambda: app.state.jobs)
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                      json_response=True,
                                      transport_security=_mcp_security(settings))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        # blocking routes run on anyio's thread pool: at most api_threads at once per process
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.api_threads
        store = open_job_store(settings)
        failed = store.fail_orphans("eval", ("queued", "running", "cancelling"))
        if failed:
            log.warning("marked %d unfinished evaluation(s) failed (server restarted)",
                        len(failed))
        worker = start_worker(settings.home) if settings.api_ingest_worker else None
        evals = EvalRunner(store)
        evals.start()
        app.state.jobs, app.state.evals, app.state.ingest_worker = store, evals, worker
        app.state.model = ModelLoad(pilar).start()
        try:
            async with mcp.session_manager.run():
                yield
        finally:
            evals.stop()
            if worker is not None:
                stop_worker(worker)
            store.close()

    app = PilarAPI(title="pilar", version=__version__, lifespan=lifespan,
                  description="Page-grounded evidence for document question answering: "
                              "ingest, search (the agent tool), answers with citations, "
                              "evaluation, pages, graph exploration.",
                  max_body_size=settings.api_max_body_bytes,
                  docs_url=None, redoc_url=None)  # served with vendored assets (routes.web)
    app.state.pilar, app.state.keyring, app.state.rate_limiter = pilar, keyring, limiter
    app.state.paths = paths
    problems.install(app)
    for routes in ROUTERS:
        app.include_router(routes(settings))
    app.router.routes.append(Route("/mcp", endpoint=McpGate(mcp_app, keyring),
                                   methods=["GET", "POST", "DELETE"], include_in_schema=False))
    origins = [o.strip() for o in settings.api_cors_origins.split(",") if o.strip()]
    if origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=origins,
                           allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["Authorization", "X-API-Key", "Content-Type"])
    return app


def app_from_env() -> FastAPI:
    """``create_app(Pilar())`` with settings from the environment (the
    factory ``uvicorn --factory`` and ``pilar serve --workers N`` import)."""
    server_logging()
    return create_app(Pilar())


LOG_FORMAT = "%(levelname)s:  %(name)s: %(message)s"
"""One line per record, as uvicorn's own ``INFO:     ...`` lines."""


def server_logging() -> None:
    """Log records of pilar and the libraries a server runs (the model
    loaders, the MCP SDK) as plain lines on stderr, warnings and errors
    only, beside uvicorn's own lines. Call before :func:`create_app`: the
    MCP SDK otherwise installs a Rich handler at INFO on the root logger,
    which wraps each record over several lines ("Loading SentenceTransformer
    model from ...", "Terminating session: None" on every MCP request).
    A no-op when the root logger already has a handler."""
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
