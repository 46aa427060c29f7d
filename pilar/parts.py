"""Small helpers that split and group, one of each for every layer: the
words of a text, a list in batches, a page id's parts, clusters of joined
items (union-find), the cores a process may use, a map of findings kept
between searches, a store's reads kept until it changes."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

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


UNKEPT = object()
"""The stamp :meth:`ReadCache.get` gives inside a write transaction: nothing read then is kept."""


class Versioned(Protocol):
    """A store whose committed writes change a stamp: the embedded file
    (:meth:`pilar.db.SqliteDatabase.data_version`), the Neo4j graph
    (:meth:`pilar.graph.neo4j.Neo4jGraphStore.data_version`)."""

    def data_version(self) -> Hashable:
        """A value that changes whenever a write is committed, by this
        process or another."""
        ...
    def in_transaction(self) -> bool:
        """Whether the calling thread is inside its own write transaction."""
        ...


class ReadCache:
    """Reads of ``db`` kept while it is unchanged: one map of at most
    ``size`` entries per kind of read (emptied when full: the reads a
    search repeats come back at once), all emptied when a write is
    committed, by this process or another (:meth:`Versioned.data_version`).
    Reads inside the calling thread's own write transaction are neither
    served nor kept (they may roll back).

    A read takes what is kept with :meth:`get`, reads the rest from the store
    and keeps it with :meth:`put`, passing back the stamp :meth:`get` gave
    (so what was read before a commit is not kept after it)."""

    def __init__(self, db: Versioned, size: int):
        self.db = db
        self.size = size
        self._lock = threading.Lock()
        self._stamp: Hashable = None
        self._maps: dict[str, KeptMap] = {}

    def get(self, kind: str, keys: Iterable[Hashable]
            ) -> tuple[dict[Hashable, Any], list[Hashable], Hashable]:
        """``(kept, missing, stamp)``: the values kept for ``keys`` of
        ``kind`` (in key order), the keys (in order, once each) they lack, and the stamp to
        :meth:`put` the missing ones under (:data:`UNKEPT` inside a write
        transaction: nothing is served)."""
        keys = list(dict.fromkeys(keys))
        if self.db.in_transaction():
            return {}, keys, UNKEPT
        stamp = self.db.data_version()
        with self._lock:
            if stamp != self._stamp:
                self._maps.clear()
                self._stamp = stamp
            kept = self._maps.get(kind, {})
            found = {k: kept[k] for k in keys if k in kept}
        return found, [k for k in keys if k not in found], stamp

    def through(self, kind: str, keys: Iterable[Hashable],
                read: Callable[[list], dict[Hashable, Any]]) -> dict[Hashable, Any]:
        """``{key: value}`` for ``keys`` (in order, once each): the kept ones,
        and ``read(missing keys)`` for the rest (then kept)."""
        kept, missing, stamp = self.get(kind, keys)
        if not missing:
            return kept  # in key order already
        found = read(missing)
        self.put(kind, found, stamp)
        kept.update(found)
        return {k: kept[k] for k in dict.fromkeys(keys)}

    def put(self, kind: str, values: dict[Hashable, Any], stamp: Hashable) -> None:
        """Keep ``values`` of ``kind`` if the store is as it was at ``stamp``."""
        with self._lock:
            if stamp is not UNKEPT and stamp == self._stamp:
                self._maps.setdefault(kind, KeptMap(self.size)).keep(values)
