"""The runs of evidence units that share one vector, and the texts embedded
for them (Tessera §3.3: the context that completes a unit is said once for
its run): cut the same way at ingest (:func:`pilar.retrieval.embeddings.page_vectors`)
and at unit selection (:mod:`pilar.packing.selection`), so a unit finds its
run's vector by the run's first unit (:func:`group_leaders`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from pilar.model import Unit

_WORD = re.compile(r"\S+")

UNIT_TOKENS = 64
"""Tokens of a vector's text that the model sees (the text is cut there)."""
GROUP_WORDS = 384
"""Words (``\\S+`` runs) of consecutive units of one context that share one
vector: a table's rows, a section's paragraphs or list items."""


@lru_cache(maxsize=200_000)
def _words(text: str) -> int:
    """How many words a unit's text holds (cached: selection cuts the anchor
    pages' runs again at every search)."""
    return len(_WORD.findall(text))


def unit_groups(units: Sequence[Unit]) -> list[list[Unit]]:
    """``units`` (in document order) cut into runs that share one vector:
    consecutive units of the same document, page, context path and table,
    gathered while their texts hold at most :data:`GROUP_WORDS` words (a
    longer unit is a run of its own). Deterministic in the units alone, so
    ingest and unit selection cut the same runs; the first unit of a run
    names its vector (:func:`group_leaders`)."""
    out: list[list[Unit]] = []
    key, words = None, 0
    for u in units:
        n = _words(u.text)
        k = (u.doc_id, u.page, u.context, u.table_index)
        if out and k == key and words + n <= GROUP_WORDS:
            out[-1].append(u)
            words += n
        else:
            out.append([u])
            key, words = k, n
    return out


def _header_row(unit: Unit) -> str:
    """A row unit's header row, ``" | "``-joined, when it names at least two
    columns (an infobox row names one: its key); else ``""``."""
    if unit.kind != "row" or sum(1 for h in unit.headers if h) < 2:
        return ""
    return " | ".join(h for h in unit.headers if h)


def _headed(context: tuple[str, ...], headers: str) -> str:
    return " | ".join(x for x in (" > ".join(context), headers) if x)


def group_text(group: Sequence[Unit]) -> str:
    """The text embedded for one run of :func:`unit_groups`: its context path
    once, a table's header row once (when every row of the run has the same
    headers), then each unit's own text, ``" ; "``-separated (a run of one
    block unit reads as its completed text). Tessera §3.3: the context that
    completes each unit is said once for the run."""
    first = group[0]
    same = all(u.headers == first.headers for u in group)
    head = _headed(first.context, _header_row(first) if same else "")
    body = " ; ".join(u.text for u in group)
    return f"{head} | {body}" if head else body


def table_heads(units: Sequence[Unit]) -> list[tuple[int, str]]:
    """``[(page, text)]``: one text per table of ``units`` (in document
    order) whose rows name at least two columns: its context path (title >
    section > caption) and its header row, no cells, from its first such
    row. Embedded beside the runs, it is the table's schema vector: a
    question that names a table's columns and not its cells ("which group
    had the most members?") meets it, where a run's vector, cut at
    :data:`UNIT_TOKENS`, is mostly about its first rows' values. Tessera
    §3.3: a table's headers are the context that completes its cells."""
    out: dict[tuple[str, int, int], tuple[int, str]] = {}
    for u in units:
        if u.table_index is None or (u.doc_id, u.page, u.table_index) in out:
            continue
        if headers := _header_row(u):
            out[(u.doc_id, u.page, u.table_index)] = (u.page, _headed(u.context, headers))
    return list(out.values())


def group_leaders(units: Sequence[Unit]) -> dict[str, str]:
    """``{unit_id: unit_id of the first unit of its run}`` (see :func:`unit_groups`)."""
    return {u.unit_id: g[0].unit_id for g in unit_groups(units) for u in g}
