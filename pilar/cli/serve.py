"""``pilar serve`` (the REST API and MCP endpoint over uvicorn), ``pilar
worker`` (the ingest worker the API's jobs run in) and ``pilar mcp`` (the
MCP tools over stdio)."""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.markup import escape

from pilar.cli.base import HomeOpt, _pilar, app, err, fail, reported
from pilar.config import Settings
from pilar.errors import PilarError
from pilar.parts import usable_cores


@app.command()
def serve(host: Annotated[str, typer.Option(
              metavar="HOST", help="interface to listen on")] = "127.0.0.1",
          port: Annotated[int, typer.Option(min=0, max=65535, metavar="PORT",
                                            help="TCP port (0 = any free port)")] = 8000,
          workers: Annotated[int | None, typer.Option(
              min=1, metavar="N",
              help="server processes (default PILAR_API_WORKERS: one per usable core)")] = None,
          home: HomeOpt = None) -> None:
    """Serve the REST API (/v1, OpenAPI at /docs) and the MCP endpoint (/mcp) with uvicorn.

    Uploads are ingested by one ingest worker process started beside the
    server (`pilar worker`), unless PILAR_API_INGEST_WORKER=false. With
    PILAR_API_ALLOWED_HOSTS empty, /mcp accepts the Host headers of
    localhost and of HOST (unless HOST is every interface, 0.0.0.0 or ::)."""
    import uvicorn

    from pilar.api.app import served_hosts, server_logging

    if home is not None:
        os.environ["PILAR_HOME"] = str(home)
    _check_listen(host, port)
    with reported():
        settings = Settings()
    if not settings.api_allowed_hosts.strip():  # for this process and the workers it starts
        os.environ["PILAR_API_ALLOWED_HOSTS"] = served_hosts(host)
    server_logging()
    workers = workers or settings.api_workers or usable_cores()
    from pilar.api import create_app

    p = _pilar(None)
    try:  # the settings' and stores' errors, here once rather than in every server process
        application = create_app(p)
    except PilarError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if workers == 1:
        uvicorn.run(application, host=host, port=port, log_level="info")
    else:  # each process builds its own app from the environment; one ingest worker for all
        from pilar.api.ingest_service import start_worker, stop_worker

        p.close()
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(name, "1")  # one core per search thread, no BLAS pools
        worker = start_worker(settings.home) if settings.api_ingest_worker else None
        os.environ["PILAR_API_INGEST_WORKER"] = "false"
        try:
            uvicorn.run("pilar.api:app_from_env", factory=True, host=host, port=port,
                        workers=workers, log_level="info")
        finally:
            if worker is not None:
                stop_worker(worker)


@app.command()
def worker(parent: Annotated[int | None, typer.Option(
               metavar="PID", help="die with this process (the server that started it)",
               hidden=True)] = None,
           home: HomeOpt = None) -> None:
    """Run the ingest jobs that servers queue (uploads, server paths) on the same job store.

    The job store is this home's jobs.sqlite, or with PILAR_GRAPH=neo4j the
    Job nodes in Neo4j, shared by every server and worker on those stores.

    Jobs are taken fairly between API keys (round-robin, a few files at a
    time) and run as `pilar ingest` runs: parses in worker processes within
    the parse budgets, batched embedding, one writer (with PILAR_RAY_ADDRESS,
    parse and embed as Ray tasks on that cluster). `pilar serve` starts
    one itself unless PILAR_API_INGEST_WORKER=false. Stops on SIGTERM or
    Ctrl-C, putting the job in progress back in the queue."""
    from pilar.api.app import server_logging
    from pilar.api.ingest_service import run_worker

    if home is not None:
        os.environ["PILAR_HOME"] = str(home)
    server_logging()
    with reported():
        run_worker(parent)


def _check_listen(host: str, port: int) -> None:
    """End the command unless ``host:port`` can be listened on: an unknown
    host exits 2, a port in use (or not ours to take) 1; before the app and
    its model load, and in place of uvicorn's exit code 3."""
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        fail(f"--host {host}: {exc.strerror}", 2)
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


@app.command()
def mcp(home: HomeOpt = None) -> None:
    """Serve the MCP tools (search, answer, get_page, cypher, ingest_paths, get_job) over stdio.

    Jobs queued with ingest_paths are run by an ingest worker on the same job
    store (`pilar worker`, or a `pilar serve` on the same home or stores)."""
    from pilar.api.app import server_logging
    from pilar.api.auth import Keyring
    from pilar.api.mcp_server import build_mcp
    from pilar.api.paths import ServerPaths

    server_logging()
    p = _pilar(home)
    with reported():
        paths = ServerPaths.of(p.settings)
    from functools import cache

    from pilar.api.job_stores import open_job_store

    build_mcp(p, Keyring([]), paths, jobs=cache(lambda: open_job_store(p.settings))).run("stdio")
