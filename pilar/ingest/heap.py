"""Giving freed heap memory back to the operating system between PDF pages.

The ONNX layout analyser (``pymupdf.layout``, its memory arena off) frees
what it allocates for a page, but glibc keeps those blocks in its per-thread
arenas, so a long PDF's parse grew by about 0.85 MB a page (1,600 pages: a
2 GB worker) while its Python objects held 12 MB per 200 pages.
:func:`release_freed` asks glibc to hand the free blocks back
(``malloc_trim(0)``); the issue's bound is 2 GB per ingest process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None on other C libraries (musl, macOS, Windows)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def release_freed() -> bool:
    """Return the heap's free blocks to the OS; True when glibc did so
    (False where there is no ``malloc_trim``: nothing to do there). A few
    milliseconds; called once per parsed PDF page."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
