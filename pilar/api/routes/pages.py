"""Pages: ``GET /v1/pages/{page_id}`` (text and supports with provenance) and
``GET /v1/pages/{page_id}/image`` (the PDF page as PNG, supports highlighted)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import Response

from pilar.api import scoping
from pilar.api.deps import Caller, PilarDep
from pilar.api.images import render_page
from pilar.api.models import PageOut, Problem, SupportOut
from pilar.config import Settings

PDF = "application/pdf"


def page_out(found, headers: dict[str, tuple[str, ...]] | None = None) -> PageOut:
    """The response model of ``(document, page, supports)``; ``headers`` are
    the column headers of its table rows (:meth:`pilar.Pilar.row_headers`)."""
    doc, page, supports = found
    return PageOut(page_id=page.page_id, doc_id=page.doc_id, number=page.number, width=page.width,
                   height=page.height, text=page.text, title=doc.title,
                   media_type=doc.media_type, n_pages=doc.n_pages,
                   supports=[SupportOut.model_validate(s) for s in supports],
                   headers={sid: list(h) for sid, h in (headers or {}).items()})


def routes(settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["pages"],
                       responses={401: {"model": Problem}, 404: {"model": Problem}})

    def visible(pilar, caller, page_id: str):
        found = scoping.page(pilar, caller, page_id)
        if found is None:
            raise HTTPException(404, "no such page")
        return found

    @router.get("/pages/{page_id}", response_model=PageOut)
    def get_page(pilar: PilarDep, caller: Caller, page_id: str) -> PageOut:
        """A page (``doc_id:number``): its text and supports with provenance."""
        return page_out(visible(pilar, caller, page_id), pilar.row_headers(page_id))

    @router.get("/pages/{page_id}/image", response_class=Response,
                responses={200: {"content": {"image/png": {}}, "description": "the page as PNG"},
                           409: {"model": Problem}, 422: {"model": Problem}})
    def page_image(pilar: PilarDep, caller: Caller, page_id: str,
                   highlight: Annotated[str | None, Query(
                       max_length=20_000, description="support ids to outline, comma-separated")
                   ] = None,
                   dpi: Annotated[int, Query(ge=36, le=300)] = 110) -> Response:
        """The page of a PDF document rendered from the stored source, the
        bounding boxes of the ``highlight`` supports drawn on it. 409 for an
        HTML document or a source no longer on the server (or changed)."""
        doc, page, supports = visible(pilar, caller, page_id)
        if doc.media_type != PDF:
            raise HTTPException(409, f"{doc.doc_id} is {doc.media_type}: only PDF pages render")
        wanted = {s for s in (highlight or "").split(",") if s}
        by_id = {s.support_id: s for s in supports}
        unknown = sorted(wanted - set(by_id))
        if unknown:
            raise HTTPException(422, f"highlight: not supports of this page: {', '.join(unknown[:5])}")
        boxes = [by_id[s].provenance.bbox for s in sorted(wanted) if by_id[s].provenance.bbox]
        try:
            data = Path(doc.uri).read_bytes()
        except OSError:
            raise HTTPException(409, f"the source of {doc.doc_id} is no longer on the server") from None
        if hashlib.sha256(data).hexdigest() != doc.sha256:
            raise HTTPException(409, f"the source of {doc.doc_id} changed since it was ingested")
        try:
            png = render_page(data, page.number, boxes, dpi)
        except ValueError as exc:
            raise HTTPException(409, f"the source of {doc.doc_id} cannot be rendered: {exc}") from None
        return Response(png, media_type="image/png")

    return router
