"""``/healthz`` (the process is up) and ``/readyz`` (the query embedding
model is loaded, every configured backend answers, the server's ingest
worker runs); both open, without a key."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from pilar.api.deps import PilarDep
from pilar.api.models import Health
from pilar.config import Settings
from pilar.model import DEFAULT_COLLECTION


def routes(settings: Settings) -> APIRouter:
    router = APIRouter(tags=["health"])

    @router.get("/healthz", response_model=Health)
    async def healthz() -> Health:
        """The process is up (answered on the event loop: never queued behind
        the searches that hold the process's PILAR_API_THREADS)."""
        return Health(status="ok")

    @router.get("/readyz", response_model=Health,
                responses={503: {"model": Health, "description": "the model is loading, a "
                                 "backend is unreachable or the ingest worker stopped"}})
    def readyz(pilar: PilarDep, request: Request):
        """200 once the query embedding model is loaded (it is at start), every
        configured backend answers a cheap read and the ingest worker this
        server started runs; else 503 naming what is not (``loading``,
        ``unreachable (...)``, ``exited (...)``)."""
        state = request.app.state
        checks: dict[str, str] = {
            f"embedding:{pilar.settings.embedding_model}": state.model.problem or "ok"}
        worker = state.ingest_worker
        if worker is not None:
            code = worker.poll()
            checks["ingest:worker"] = "ok" if code is None else f"exited ({code})"
        for role, store, probe in (("graph", pilar.graph,
                                    lambda s: s.find_by_sha256("", DEFAULT_COLLECTION)),
                                   ("index", pilar.index, lambda s: s.count())):
            try:
                probe(store)
                checks[f"{role}:{store.name}"] = "ok"
            except Exception as exc:  # noqa: BLE001 - any failure means not ready
                checks[f"{role}:{store.name}"] = f"unreachable ({type(exc).__name__})"
        ok = all(v == "ok" for v in checks.values())
        body = Health(status="ok" if ok else "unavailable", checks=checks)
        return body if ok else JSONResponse(body.model_dump(), status_code=503)

    return router
