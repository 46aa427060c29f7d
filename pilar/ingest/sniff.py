"""File type sniffing from content, never from the file name."""

from __future__ import annotations

import zlib

from pilar.errors import IngestError, UnsupportedTypeError
from pilar.ingest.limits import human_bytes

HTML = "text/html"
PDF = "application/pdf"

_HTML_MARKERS = (b"<!doctype html", b"<html", b"<head", b"<body", b"<div", b"<p", b"<table",
                 b"<h1", b"<h2", b"<title", b"<!--", b"<meta", b"<span", b"<section", b"<article",
                 b"<ul", b"<script", b"<style", b"<?xml", b"<a ", b"<br")

_OTHER_MAGIC = (
    (b"PK\x03\x04", "a ZIP container (DOCX/XLSX/ODF?)"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\xd0\xcf\x11\xe0", "an OLE2 file (DOC/XLS?)"),
    (b"\x7fELF", "an ELF executable"),
    (b"MZ", "a Windows executable"),
)


def maybe_gunzip(data: bytes, limit: int) -> bytes:
    """Decompress gzip input, refusing to inflate past ``limit`` bytes.

    Raises :class:`IngestError` on a gzip bomb or a corrupt stream.
    """
    if not data.startswith(b"\x1f\x8b"):
        return data
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise IngestError(f"corrupt gzip stream: {exc}") from None
    if len(out) > limit or d.unconsumed_tail:
        raise IngestError(f"gzip content larger than the {human_bytes(limit)} limit "
                          "(PILAR_MAX_HTML_BYTES)")
    return out


def sniff(data: bytes) -> str:
    """Return the media type of ``data``: :data:`HTML` or :data:`PDF`.

    Raises :class:`IngestError` for empty input and
    :class:`UnsupportedTypeError` naming what the bytes look like otherwise.
    """
    if not data or not data.strip():
        raise IngestError("empty file")
    head = data[:1024]
    if b"%PDF-" in head:
        return PDF
    for magic, what in _OTHER_MAGIC:
        if head.startswith(magic):
            raise UnsupportedTypeError(f"unsupported file type: content is {what}")
    for bom, enc in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if head.startswith(bom):
            head = head[2:].decode(enc, errors="ignore").encode("ascii", errors="ignore")
            break
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith(b"<") and any(m in text for m in _HTML_MARKERS):
        return HTML
    if _looks_binary(data[:4096]):
        raise UnsupportedTypeError("unsupported file type: binary content, not HTML or PDF")
    if b"<" in text and any(m in text for m in _HTML_MARKERS):
        return HTML
    raise UnsupportedTypeError("unsupported file type: neither HTML nor PDF")


def _looks_binary(chunk: bytes) -> bool:
    if b"\x00" in chunk:
        return True
    controls = sum(1 for b in chunk if b < 9 or 13 < b < 32)
    try:
        chunk.decode("utf-8")
        return controls > len(chunk) * 0.01
    except UnicodeDecodeError:
        high = sum(1 for b in chunk if b >= 0x80)
        return controls > len(chunk) * 0.01 or high > len(chunk) * 0.3
