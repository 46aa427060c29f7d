"""``/healthz`` (the process is up) and ``/readyz`` (every configured backend
answers); both open, without a key."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from pilar.api.deps import PilarDep
from pilar.api.models import Health
from pilar.config import Settings
from pilar.model import DEFAULT_COLLECTION


def routes(settings: Settings) -> APIRouter:
    router = APIRouter(tags=["health"])

    @router.get("/healthz", response_model=Health)
    def healthz() -> Health:
        """The process is up."""
        return Health(status="ok")

    @router.get("/readyz", response_model=Health,
                responses={503: {"model": Health, "description": "a backend is unreachable"}})
    def readyz(pilar: PilarDep):
        """Every configured backend answers a cheap read; 503 naming the one that does not."""
        checks: dict[str, str] = {}
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
