"""Small helpers that split and group, one of each for every layer: the
words of a text, a list in batches, a page id's parts, clusters of joined
items (union-find), the cores a process may use, a map of findings kept
between searches."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

_WORD = re.compile(r"\w+", re.UNICODE)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; the CPU count
    where that cannot be read), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def words(text: str) -> list[str]:
    """The words of ``text`` (runs of Unicode letters, digits and ``_``),
    lower-cased, in order, repeats kept."""
    return [w.lower() for w in _WORD.findall(text)]


def batched(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` in slices of at most ``size`` (> 0), in order."""
    for i in range(0, len(items), size):
        yield items[i:i + size]


def split_page_id(page_id: str) -> tuple[str, int]:
    """``(doc_id, number)`` of a page id ``doc_id:number``; raises
    ``ValueError`` when ``page_id`` has no ``:`` or no number after it."""
    doc_id, sep, number = page_id.rpartition(":")
    if not sep or not number.isdigit():
        raise ValueError(f"page id {page_id!r} is not doc_id:number")
    return doc_id, int(number)


def doc_of(page_id: str) -> str:
    """The document id of a page id ``doc_id:number`` (unchecked)."""
    return page_id.rpartition(":")[0]


class UnionFind:
    """Clusters of ``n`` items joined pairwise; :meth:`find` gives a
    cluster's smallest member (path halving)."""

    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        """Join the clusters of ``a`` and ``b``."""
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


class KeptMap(dict):
    """A dict of at most ``size`` entries, emptied when it would hold more:
    findings kept between searches, whose repeats come back at once. A
    lookup is a plain dict's (an LRU's bookkeeping cost more than the work
    it saved where a search makes hundreds of lookups); writes take a lock."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size
        self._lock = threading.Lock()

    def keep(self, values: dict) -> None:
        """Add ``values`` (emptying the map first when they would not fit)."""
        with self._lock:
            if len(self) + len(values) > self.size:
                self.clear()
            self.update(values)

    def through(self, key: Hashable, work: Callable[[], Any]) -> Any:
        """``self[key]``, worked out by ``work()`` and kept when missing."""
        found = self.get(key, _MISSING)
        if found is _MISSING:
            found = work()
            self.keep({key: found})
        return found


_MISSING = object()
