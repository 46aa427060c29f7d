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
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
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


SWAGGER = "static/vendor/swagger-ui-dist-5.35.0"
REDOC = "static/vendor/redoc-2.5.4"
"""The vendored API documentation pages' assets (``static/vendor/README.md``)."""
REDOC_POLICY = ("default-src 'self'; script-src 'self' blob:; worker-src 'self' blob:; "
                "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
                "font-src 'self' data:; frame-ancestors 'none'")
"""ReDoc's page keeps to this server (the vendored bundle's one change
points its footer logo at no server at all)."""


def routes(settings: Settings) -> APIRouter:
    """``GET /`` (``index.html``), ``/static/...`` (the page's files) and the
    OpenAPI documentation at ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc),
    their scripts served from ``static/vendor`` (no CDN: they work offline).
    Raises ``RuntimeError`` when the package was built without them."""
    for needed in ("index.html", f"{SWAGGER[7:]}/swagger-ui-bundle.js",
                   f"{REDOC[7:]}/redoc.standalone.js"):
        if not (STATIC / needed).is_file():
            raise RuntimeError(f"the web page's files are missing from {STATIC}: {needed}")
    router = APIRouter(include_in_schema=False)

    @router.get("/")
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html", headers=HEADERS)

    @router.get("/docs")
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="pilar API",
                                   swagger_js_url=f"/{SWAGGER}/swagger-ui-bundle.js",
                                   swagger_css_url=f"/{SWAGGER}/swagger-ui.css",
                                   swagger_favicon_url="/static/favicon.svg")

    @router.get("/redoc")
    def redoc() -> HTMLResponse:
        page = get_redoc_html(openapi_url="/openapi.json", title="pilar API",
                              redoc_js_url=f"/{REDOC}/redoc.standalone.js",
                              redoc_favicon_url="/static/favicon.svg", with_google_fonts=False)
        page.headers["Content-Security-Policy"] = REDOC_POLICY
        return page

    router.mount("/static", StaticFiles(directory=STATIC), name="static")
    return router
