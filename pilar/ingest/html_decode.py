"""Decoding HTML bytes to UTF-8 before parsing (used by :mod:`pilar.ingest.html`).

Order: byte-order mark; a declared charset (``<meta charset>``,
``http-equiv`` or the XML declaration); valid UTF-8; else windows-1252 with
the five bytes it leaves undefined read as Latin-1, so no byte is lost.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["decode_html", "strip_prolog"]

_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe\x00\x00", "utf-32-le"),
         (b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xff\xfe", "utf-16-le"),
         (b"\xfe\xff", "utf-16-be"))
_META_CHARSET = re.compile(
    rb"""<meta[^>]{0,400}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]{1,40})""", re.I)
_XML_ENCODING = re.compile(
    rb"""^\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9_.:\-]{1,40})""")
# WHATWG: these labels mean windows-1252, which maps every byte to a character.
_AS_CP1252 = frozenset({"iso-8859-1", "iso8859-1", "latin-1", "latin1", "l1", "ascii",
                        "us-ascii", "cp1252", "windows-1252", "iso-8859-15"})

def decode_html(data: bytes) -> tuple[bytes, str, bool]:
    """Return ``(utf8_bytes, encoding, guessed)``.

    Order: byte-order mark; ``<meta charset>`` / ``http-equiv`` or the XML
    declaration (first 4 KiB); valid UTF-8; else windows-1252 with the five
    bytes it leaves undefined read as Latin-1, so every byte survives.
    ``guessed`` is true when the last fallback was used or a declared
    charset was unknown or did not fit the bytes.
    """
    for bom, enc in _BOMS:
        if data.startswith(bom):
            body = data[len(bom):]
            if enc == "utf-8":
                return _utf8_or_fallback(body, "utf-8")
            return body.decode(enc, errors="replace").encode("utf-8"), enc, False
    head = data[:4096]
    m = _XML_ENCODING.match(head) or _META_CHARSET.search(head)
    declared = None
    if m:
        label = m.group(1).decode("ascii").lower()
        try:
            declared = codecs.lookup(label).name
        except LookupError:
            declared = None
        if label in _AS_CP1252:
            declared = "cp1252"
    if declared is None or declared in ("utf-8", "utf-16", "utf-16-le", "utf-16-be"):
        # A UTF-16 declaration without a BOM inside ASCII-compatible bytes is a lie.
        return _utf8_or_fallback(data, "utf-8", guessed=bool(m) and declared is None)
    if declared == "cp1252":
        return _cp1252(data), "windows-1252", False
    return data.decode(declared, errors="replace").encode("utf-8"), declared, False


def _utf8_or_fallback(data: bytes, enc: str, guessed: bool = False) -> tuple[bytes, str, bool]:
    try:
        data.decode("utf-8")
        return data, enc, guessed
    except UnicodeDecodeError:
        return _cp1252(data), "windows-1252", True


def _latin1_fill(err: UnicodeDecodeError) -> tuple[str, int]:
    return err.object[err.start:err.end].decode("latin-1"), err.end


codecs.register_error("pilar-latin1", _latin1_fill)


def _cp1252(data: bytes) -> bytes:
    return data.decode("cp1252", errors="pilar-latin1").encode("utf-8")


def strip_prolog(data: bytes) -> bytes:
    """Cut an XML declaration and a DOCTYPE with an internal subset (entity
    definitions) off the front: the HTML parser would show them as text."""
    head = data[:64].lstrip()
    if not (head[:5] == b"<?xml" or head[:9].lower() == b"<!doctype"):
        return data
    rest = data.lstrip()
    if rest[:5] == b"<?xml":
        end = rest.find(b"?>")
        rest = rest[end + 2:].lstrip() if end >= 0 else rest
    if rest[:9].lower() == b"<!doctype":
        gt, bracket = rest.find(b">"), rest.find(b"[")
        if 0 <= bracket < gt:
            end = rest.find(b"]>", bracket)
            if end >= 0:
                rest = rest[end + 2:]
    return rest
