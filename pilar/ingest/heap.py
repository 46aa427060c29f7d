"""Giving freed heap memory back to the operating system between PDF pages.

The ONNX layout analyser (``pymupdf.layout``, its memory arena off) frees
what it allocates for a page, but glibc keeps those blocks in its per-thread
arenas, so a long PDF's parse grew by about 0.85 MB a page (1,600 pages: a
2 GB worker) while its Python objects held 12 MB per 200 pages.
:func:`release_freed` asks glibc to hand the free blocks back
(``malloc_trim(0)``); the issue's bound is 2 GB per ingest process.

A trim is not free: the pages it hands back are faulted in again (and
zeroed by the kernel) as soon as the next page allocates, so a trim after
every page cost the born-digital PDF bench corpus (121 pages) about 0.8 s
of system CPU, 7% of its parse. :func:`release_freed` therefore trims only
once the process has grown by :data:`TRIM_SLACK` since its last trim: the
next pages reuse the blocks a page freed, and memory stays bounded all the
same (by the slack more).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import resource


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None on other C libraries (musl, macOS, Windows)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


TRIM_SLACK = 128 * 2**20
"""Bytes a process may grow by (resident) since its last trim before
:func:`release_freed` trims again: on the PDF bench corpus 2-3 trims instead
of 134, 0.2 s of system CPU instead of 1.0, 50 MB more at the peak (a page
of it may free 50 MB at once; with 32 MiB, 30 trims cost 0.9 s)."""

_trimmed_at = 0
"""This process's resident bytes right after its last trim (0: none yet)."""


def _statm(field: int) -> int:
    """Bytes of field ``field`` of ``/proc/self/statm`` (0 size, 1 resident)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[field]) * resource.getpagesize()


def resident() -> int:
    """Bytes of this process resident in memory now (VmRSS)."""
    return _statm(1)


def mapped() -> int:
    """Bytes of this process's address space now (VmSize)."""
    return _statm(0)


def release_freed() -> bool:
    """Return the heap's free blocks to the OS when this process grew by
    more than :data:`TRIM_SLACK` since the last time (see the module
    docstring); True when glibc did so now (False where there is no
    ``malloc_trim``: nothing to do there). Called once per parsed PDF page;
    a trim takes a few milliseconds, the check a few microseconds."""
    global _trimmed_at
    trim = _malloc_trim()
    if trim is None or resident() - _trimmed_at <= TRIM_SLACK:
        return False
    trim(0)
    _trimmed_at = resident()
    return True
