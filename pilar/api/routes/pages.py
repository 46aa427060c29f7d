"""Pages: ``GET /v1/pages/{page_id}`` (text and supports with provenance,
the supports paginated) and ``GET /v1/pages/{page_id}/image`` (the PDF page
as PNG, supports highlighted; rendered once per page and dpi, then cached)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import Response

from pilar.api import scoping
from pilar.api.deps import RATE_LIMITED, Caller, PilarDep, rate_limit
from pilar.api.images import PageImages, highlight
from pilar.api.models import PageOut, Problem, SupportOut
from pilar.config import Settings

PDF = "application/pdf"
SUPPORTS_LIMIT, MAX_SUPPORTS_LIMIT = 200, 1000
"""Supports per page response by default, and at most."""


def page_out(found, headers: dict[str, tuple[str, ...]] | None = None, offset: int = 0,
             limit: int = SUPPORTS_LIMIT) -> PageOut:
    """The response model of ``(document, page, supports)`` with the
    supports ``offset`` to ``offset + limit`` (in page order; ``next_offset``
    the offset of the rest, None at the end); ``headers`` are the column
    headers of its table rows (:meth:`pilar.Pilar.row_headers`), kept for
    the supports returned."""
    doc, page, supports = found
    shown = supports[offset:offset + limit]
    ids = {s.support_id for s in shown}
    return PageOut(page_id=page.page_id, doc_id=page.doc_id, number=page.number, width=page.width,
                   height=page.height, text=page.text, title=doc.title,
                   media_type=doc.media_type, n_pages=doc.n_pages,
                   supports=[SupportOut.model_validate(s) for s in shown],
                   supports_total=len(supports), offset=offset, limit=limit,
                   next_offset=offset + limit if offset + limit < len(supports) else None,
                   headers={sid: list(h) for sid, h in (headers or {}).items() if sid in ids})


def routes(settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["pages"],
                       responses={401: {"model": Problem}, 404: {"model": Problem}})
    images = PageImages(settings)

    def visible(pilar, caller, page_id: str):
        found = scoping.page(pilar, caller, page_id)
        if found is None:
            raise HTTPException(404, "no such page")
        return found

    @router.get("/pages/{page_id}", response_model=PageOut)
    def get_page(pilar: PilarDep, caller: Caller, page_id: str,
                 offset: Annotated[int, Query(ge=0, le=10**9, description="first support")] = 0,
                 limit: Annotated[int, Query(ge=1, le=MAX_SUPPORTS_LIMIT,
                                             description="supports at most")] = SUPPORTS_LIMIT
                 ) -> PageOut:
        """A page (``doc_id:number``): its text and supports with provenance,
        ``limit`` supports from ``offset`` in page order (``supports_total``
        all of them; ``next_offset`` where the next slice starts, null at the end)."""
        return page_out(visible(pilar, caller, page_id), pilar.row_headers(page_id), offset, limit)

    @router.get("/pages/{page_id}/image", response_class=Response,
                dependencies=[rate_limit("page image")],
                responses={200: {"content": {"image/png": {}}, "description": "the page as PNG"},
                           409: {"model": Problem}, 422: {"model": Problem}, **RATE_LIMITED})
    def page_image(pilar: PilarDep, caller: Caller, page_id: str,
                   highlight_ids: Annotated[str | None, Query(
                       alias="highlight", max_length=20_000,
                       description="support ids to outline, comma-separated")] = None,
                   dpi: Annotated[int, Query(ge=36, le=300)] = 110) -> Response:
        """The page of a PDF document rendered from the stored source, the
        bounding boxes of the ``highlight`` supports drawn on it. Rendered
        once per page and dpi (then cached, PILAR_API_IMAGE_CACHE_BYTES),
        at a lower dpi when PILAR_PDF_MAX_RENDER_PIXELS asks. 409 for an HTML
        document, a source no longer on the server (or changed) or a page
        over the pixel caps."""
        doc, page, supports = visible(pilar, caller, page_id)
        if doc.media_type != PDF:
            raise HTTPException(409, f"{doc.doc_id} is {doc.media_type}: only PDF pages render")
        wanted = {s for s in (highlight_ids or "").split(",") if s}
        by_id = {s.support_id: s for s in supports}
        unknown = sorted(wanted - set(by_id))
        if unknown:
            raise HTTPException(422, f"highlight: not supports of this page: {', '.join(unknown[:5])}")
        boxes = [by_id[s].provenance.bbox for s in sorted(wanted) if by_id[s].provenance.bbox]
        try:
            render = images.render(doc, page.number, dpi)
        except ValueError as exc:
            raise HTTPException(409, str(exc)) from None
        return Response(highlight(render, boxes), media_type="image/png")

    return router
