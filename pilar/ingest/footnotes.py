"""Footnote markers of table cells (Tessera §3.3: every value keeps what
qualifies it), shared by HTML and PDF.

A marker glued to a value or a header (``"1,250²"``, ``"Depth (m)ᵃ"``,
``"6.5*"``, or a ``<sup>`` / raised small text printed the same way) is
split from the cell's text and linked to its note, a line under the table
that starts with the same marker (``"² Estimated"``, ``"a) At low tide"``,
``"(3) Provisional"``, ``"* Provisional"``). A trailing character is a
marker only when such a note exists, so ``"km²"`` with no note ``2`` stays
as it is.

Markers are compared in one form (:func:`marker_key`): superscript digits
and letters as ASCII (``"²"`` -> ``"2"``, ``"ᵃ"`` -> ``"a"``), symbols as
they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pilar.model import GridCell

__all__ = ["has_mark", "marker_key", "note_lines", "printed", "split_marker"]

_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ",
                              "0123456789abcdefghijklmnoprstuvwxyz")
_SUP_CHARS = "⁰¹²³⁴⁵⁶⁷⁸⁹ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ"
_SYMBOLS = "*†‡§¶#"
_MARK = rf"[0-9]{{1,2}}|[a-z]|[{_SYMBOLS}]{{1,3}}"
_NOTE = re.compile(
    rf"^\s*(?:\(({_MARK})\)\s*|({_MARK})[.):]?\s+|([{_SUP_CHARS}]{{1,2}}|[{_SYMBOLS}]{{1,3}})\s*)"
    r"(\S.*)$")
_TRAILING = re.compile(rf"^(.*?\S)\s*([{_SUP_CHARS}]{{1,2}}(?:,[{_SUP_CHARS}]{{1,2}})*"
                       rf"|[{_SYMBOLS}]{{1,3}})$", re.S)


_ANY_MARK = re.compile(f"[{_SUP_CHARS}{re.escape(_SYMBOLS)}]")


def has_mark(text: str) -> bool:
    """``text`` holds a superscript character or a note symbol (a table
    worth looking for notes of)."""
    return bool(_ANY_MARK.search(text))


def marker_key(marker: str) -> str:
    """One form of a marker: superscripts as ASCII, outer blanks removed."""
    return marker.strip().translate(_SUPERSCRIPTS)


def note_lines(text: str) -> dict[str, str]:
    """The notes in ``text`` (one per line): ``{marker_key: note text}`` for
    each line starting with a marker; other lines are ignored."""
    notes: dict[str, str] = {}
    for line in text.split("\n"):
        m = _NOTE.match(line)
        if m:
            key = marker_key(m.group(1) or m.group(2) or m.group(3))
            notes.setdefault(key, m.group(4).strip().lstrip("-–—:").strip())
    return notes


def split_marker(text: str, notes: dict[str, str], raised: str = "") -> tuple[str, tuple[str, ...]]:
    """``(text without its marker, ("marker: note", ...))`` for a cell
    ``text`` ending in markers that ``notes`` holds: ``raised`` is the
    trailing text printed as superscript (an HTML ``<sup>``, a raised small
    PDF span; comma-separated markers allowed), else a trailing Unicode
    superscript or symbol. Unknown markers leave ``text`` as it is."""
    if not notes or not text:
        return text, ()
    if raised:
        head = text[:len(text) - len(raised)] if text.endswith(raised) else ""
        marks = [marker_key(m) for m in re.split(r"[,\s]+", raised) if m]
    else:
        m = _TRAILING.match(text)
        if not m:
            return text, ()
        head = m.group(1)
        marks = [marker_key(x) for x in m.group(2).split(",")] if m.group(2)[0] in _SUP_CHARS \
            else [m.group(2)]
    head = head.rstrip()
    if not head or not marks or any(mark not in notes for mark in marks):
        return text, ()
    return head, tuple(f"{mark}: {notes[mark]}" for mark in marks)


def printed(cells: Iterable[GridCell]) -> list[str]:
    """The distinct ``cells`` whose marker was split off, as the source
    printed them: text and markers glued (``"1,250"`` + ``"2: ..."`` ->
    ``"1,2502"``, superscripts in ASCII) and spaced (``"1,250 2"``); for
    comparing with gold data that keeps markers in values (WikiTableQuestions)."""
    out: list[str] = []
    seen: set[int] = set()
    for cell in cells:
        if cell.notes and id(cell) not in seen:
            seen.add(id(cell))
            marks = ",".join(note.split(":", 1)[0] for note in cell.notes)
            out += [cell.text + marks, f"{cell.text} {marks}"]
    return out
