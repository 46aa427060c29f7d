"""Size limits of ingested input, and sizes worded for people."""

from __future__ import annotations

import re

from pilar.errors import IngestError

_MUPDF_ALLOC = re.compile(r"\b(?:malloc|calloc|realloc) \([^)]*\) failed")
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(n: int) -> str:
    """``n`` bytes as a short size with a binary unit: ``"100 B"``,
    ``"1.5 KiB"``, ``"37 KiB"``, ``"200 MiB"`` (two significant figures
    under 10, whole numbers above)."""
    value, unit = float(n), 0
    while unit < len(_UNITS) - 1 and round(value) >= 1024:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{int(value)} B"
    text = f"{value:.1f}" if value < 10 else f"{value:.0f}"
    return f"{text.removesuffix('.0')} {_UNITS[unit]}"


def over_limit(what: str, size: int, limit: int, setting: str) -> IngestError:
    """The error for ``what`` (e.g. ``"file"``) of ``size`` bytes over
    ``limit`` bytes, naming ``setting``; exact byte counts are added when the
    short sizes read the same."""
    shown, cap = human_bytes(size), human_bytes(limit)
    if shown == cap:
        shown, cap = f"{size:,} bytes", f"{limit:,}-byte"
    return IngestError(f"{what} is {shown}, over the {cap} limit ({setting})")


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation refused: Python's ``MemoryError``, or
    MuPDF's failed ``malloc``/``calloc``/``realloc`` (which PyMuPDF raises as
    ``RuntimeError('code=2: realloc (78624 bytes) failed')``)."""
    return isinstance(exc, MemoryError) or (
        isinstance(exc, RuntimeError) and _MUPDF_ALLOC.search(str(exc)) is not None)
