"""Ingestion: files -> pages -> supports, tables, units -> assertions, entities.

Ingest parses and returns records (:class:`pilar.model.ParsedDocument`); it
never touches a store. :func:`parse` is the entry point, usable without one.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

from pilar.config import Settings
from pilar.errors import IngestError
from pilar.ingest.graph_build import build_graph
from pilar.ingest.limits import over_limit
from pilar.ingest.sniff import PDF, maybe_gunzip, sniff
from pilar.model import DEFAULT_COLLECTION, Document, ParsedDocument

__all__ = ["parse", "read_source", "new_document", "document_id", "PageProgress"]

PageProgress = Callable[[int, int], None]
"""``on_page(done, total)``: called once a PDF is open (``done`` 0) and after
each of its pages is parsed (pages done so far, pages in the document)."""


def read_source(path: Path, settings: Settings) -> bytes:
    """Read a file's bytes, refusing directories, unreadable and oversize files.

    Raises :class:`IngestError` with a one-line reason.
    """
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise IngestError("not a regular file", str(path))
        if size > settings.max_file_bytes:
            exc = over_limit("file", size, settings.max_file_bytes, "PILAR_MAX_FILE_BYTES")
            exc.path = str(path)
            raise exc
        return path.read_bytes()
    except PermissionError:
        raise IngestError("permission denied", str(path)) from None
    except FileNotFoundError:
        raise IngestError("no such file", str(path)) from None
    except IsADirectoryError:
        raise IngestError("is a directory", str(path)) from None
    except OSError as exc:
        raise IngestError(f"cannot read: {exc.strerror or exc}", str(path)) from None


def document_id(sha256: str, collection: str = DEFAULT_COLLECTION, *,
                keyed: bool = False) -> str:
    """The id of the document of bytes ``sha256`` (hex) in ``collection``: 16
    hex digits, the first of ``sha256`` itself in ``default`` (ids as they
    were before collections had documents of their own), else of the
    SHA-256 of ``"<collection>\\n<sha256>"``, so the same bytes in two
    collections are two documents. ``keyed`` asks for the second form in
    ``default`` too: a store written before held one document per bytes
    whatever its collection, so the plain id may be another collection's."""
    if collection == DEFAULT_COLLECTION and not keyed:
        return sha256[:16]
    return hashlib.sha256(f"{collection}\n{sha256}".encode()).hexdigest()[:16]


def new_document(data: bytes, uri: str, media_type: str, doc_id: str | None = None) -> Document:
    """A :class:`Document` of ``data`` with id ``doc_id`` (default: the id in
    ``default``, :func:`document_id`); title and page count are filled in by
    the parser."""
    digest = hashlib.sha256(data).hexdigest()
    return Document(doc_id=doc_id or document_id(digest), uri=uri,
                    title=Path(uri).stem if uri else "", media_type=media_type, sha256=digest,
                    n_pages=0)


def parse(source: str | Path | bytes, *, uri: str | None = None, doc_id: str | None = None,
          settings: Settings | None = None,
          on_page: PageProgress | None = None,
          timings: dict[str, float] | None = None) -> ParsedDocument:
    """Parse a file (path) or its bytes into a :class:`ParsedDocument`.

    The type is sniffed from the content (gzip is inflated first, within
    ``settings.max_html_bytes``). ``uri`` names the source in the document
    (default: the absolute path, or ``"<bytes>"``). The document's assertions
    and entities are built last (:func:`pilar.ingest.graph_build.build_graph`).
    ``on_page`` reports the pages of a PDF as they are parsed. ``doc_id``
    keys the document and every record in it (default: its id in the
    ``default`` collection, :func:`document_id`).

    Raises :class:`pilar.errors.IngestError` (or its subclass
    :class:`~pilar.errors.UnsupportedTypeError`) with a one-line reason.
    ``timings``, when given, receives the seconds spent in ``parse`` (pages,
    supports, tables, units) and ``graph`` (assertions and entities).
    """
    timings = {} if timings is None else timings
    t0 = time.perf_counter()
    settings = settings or Settings()
    if isinstance(source, (str, Path)):
        path = Path(source)
        data = read_source(path, settings)
        uri = uri or str(path.resolve())
    else:
        data = bytes(source)
        uri = uri or "<bytes>"
    try:
        raw = data
        data = maybe_gunzip(data, settings.max_html_bytes)
        media_type = sniff(data)
        doc = new_document(raw, uri, media_type, doc_id)
        if media_type == PDF:
            from pilar.ingest.pdf import parse_pdf

            parsed = parse_pdf(data, doc, settings, on_page)
        else:
            from pilar.ingest.html import parse_html

            parsed = parse_html(data, doc, settings)
        t1 = time.perf_counter()
        timings["parse"] = t1 - t0
        built = build_graph(parsed, settings, data)
        timings["graph"] = time.perf_counter() - t1
        return built
    except IngestError as exc:
        if exc.path is None:
            exc.path = uri
        raise
