"""The evidence explorer: the web page served at ``/`` (issue 18).

Plain HTML, CSS and JavaScript modules shipped inside the package
(``pilar/api/static/``; the vendored libraries and their licences under
``static/vendor/``), no build step. The page holds no data: everything it
shows comes from the ``/v1`` routes with the user's API key, which the page
asks for when the server answers 401 and keeps in the tab's sessionStorage.
So the shell and its static files are served without a key (a browser
cannot attach a header to a page load), while every ``/v1`` call behind them
needs one.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from pilar.config import Settings

STATIC = Path(__file__).parents[1] / "static"
"""The page's files: ``index.html``, ``app.css``, ``js/``, ``vendor/``."""

HEADERS = {
    # the page only talks to its own origin; no inline script, no framing
    # (inline styles are allowed: the graph view sets style attributes)
    "Content-Security-Policy": ("default-src 'self'; img-src 'self' blob:; "
                                "style-src 'self' 'unsafe-inline'; "
                                "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def routes(settings: Settings) -> APIRouter:
    """``GET /`` (``index.html``) and ``/static/...`` (the page's files).
    Raises ``RuntimeError`` when the package was built without them."""
    if not (STATIC / "index.html").is_file():
        raise RuntimeError(f"the web page's files are missing from {STATIC}")
    router = APIRouter(include_in_schema=False)

    @router.get("/")
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html", headers=HEADERS)

    router.mount("/static", StaticFiles(directory=STATIC), name="static")
    return router
