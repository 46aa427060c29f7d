"""The one helper of each kind (pilar/parts.py): words, batches, page ids,
union-find clusters, kept findings, reads kept until a store changes."""

from __future__ import annotations

import pytest

from pilar.parts import (UNKEPT, KeptMap, ReadCache, UnionFind, batched, doc_of, split_page_id,
                         words)


def test_words_are_lower_cased_unicode_runs_in_order():
    assert words("Who won the 2014 Übung_Cup, São Paulo?") == \
        ["who", "won", "the", "2014", "übung_cup", "são", "paulo"]
    assert words(" -- ") == []


def test_batched_keeps_order_and_cuts_the_last_batch_short():
    assert [list(b) for b in batched(list(range(7)), 3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(batched([], 3)) == []


def test_page_ids_split_at_the_last_colon():
    assert split_page_id("abc:def:12") == ("abc:def", 12)
    assert doc_of("abc:def:12") == "abc:def"
    for bad in ("abc", "abc:", "abc:x1"):
        with pytest.raises(ValueError, match="is not doc_id:number"):
            split_page_id(bad)


def test_union_find_roots_are_the_smallest_member():
    uf = UnionFind(6)
    uf.union(4, 2)
    uf.union(5, 4)
    uf.union(1, 3)
    assert [uf.find(i) for i in range(6)] == [0, 1, 2, 1, 2, 2]


def test_a_kept_map_works_a_finding_out_once_and_empties_when_full():
    calls = []
    kept = KeptMap(3)
    for key in ["a", "b", "a", "c", "a"]:
        assert kept.through(key, lambda k=key: calls.append(k) or k.upper()) == key.upper()
    assert calls == ["a", "b", "c"] and dict(kept) == {"a": "A", "b": "B", "c": "C"}
    kept.through("d", lambda: None)  # a fourth does not fit: the map starts again
    assert dict(kept) == {"d": None}
    assert kept.through("d", lambda: calls.append("d")) is None and calls == ["a", "b", "c"]
    kept.keep({"e": 1, "f": 2})
    assert dict(kept) == {"d": None, "e": 1, "f": 2}


def test_a_read_cache_keeps_reads_until_a_commit_and_none_inside_a_write(tmp_path):
    """ReadCache on the real store file: a read is kept until a write is
    committed (by any connection), a read made before a commit is not kept
    after it, and inside the caller's own write transaction nothing is
    served or kept."""
    from pilar.db import SqliteDatabase

    db = SqliteDatabase(tmp_path / "pilar.sqlite")
    cache = ReadCache(db, 8)
    reads = []

    def read(keys):
        reads.append(list(keys))
        return {k: k * 2 for k in keys}

    assert cache.through("x", [1, 2, 1], read) == {1: 2, 2: 4} and reads == [[1, 2]]
    assert cache.through("x", [2, 3], read) == {2: 4, 3: 6} and reads[-1] == [3]
    _, missing, stamp = cache.get("x", [1, 4])
    assert missing == [4]
    with db.transaction() as c:
        c.execute("CREATE TABLE t (x)")
        assert cache.get("x", [1]) == ({}, [1], UNKEPT)  # its own write may roll back
    cache.put("x", {4: 8}, stamp)  # read before the commit: not kept after it
    assert cache.get("x", [1, 4])[1] == [1, 4]
