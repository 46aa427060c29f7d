"""Entities: the alias table and within-document linking (PILAR App. E.2
"Entity Linking and Cross-Document Canonicalization").

- :class:`AliasTable` — the alias table (``aliases.tsv`` beside this module,
  ``Settings.aliases_path`` overrides): known variants take one canonical
  name and type (``USA``, ``U.S.`` -> ``United States``, country).
- :class:`EntityResolver` — collects a document's mentions (harvested by
  :mod:`pilar.ingest.graph_build` and :mod:`pilar.ingest.assertions`) and
  clusters them into entities: same normalised key, alias table, declared
  aliases, surname (``Obama`` -> the one ``Barack Obama`` of the document),
  acronym of three letters or more (``NFL`` -> the one ``National Football
  League``), and
  :func:`~pilar.ingest.names.similarity` >= ``threshold`` (default 0.75)
  between type-compatible names, blocked (no all-pairs comparison).

Entity ids are global (shared across documents):
``f"{type}:{normalise(canonical name)}"`` (:func:`~pilar.ingest.names.entity_id`),
so the same entity named alike in two documents is one node; different ids
for the same thing are linked by SAME_AS (:mod:`pilar.graph.linking`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz, process

from pilar.ingest.names import (ENTITY_TYPES, GENERIC_WORDS, acronym, compatible, entity_id,
                                entity_surface, family, normalise, similarity)
from pilar.model import Entity
from pilar.parts import UnionFind

__all__ = ["AliasTable", "AliasEntry", "load_aliases", "EntityResolver", "DEFAULT_ALIASES"]

DEFAULT_ALIASES = Path(__file__).with_name("aliases.tsv")


@dataclass(slots=True, frozen=True)
class AliasEntry:
    name: str
    type: str


class AliasTable:
    """Known variants -> canonical name and type (PILAR App. E.2 alias tables).

    ``entries`` maps the :func:`normalise` d variant (the canonical name
    included) to its :class:`AliasEntry`; ``variants`` maps a canonical name
    to all its variants as written.
    """

    def __init__(self, rows: list[tuple[str, str, list[str]]]):
        self.entries: dict[str, AliasEntry] = {}
        self.variants: dict[str, tuple[str, ...]] = {}
        for name, type_, aliases in rows:
            entry = AliasEntry(name, type_)
            for variant in (name, *aliases):
                self.entries.setdefault(normalise(variant), entry)
            self.variants[name] = tuple(aliases)

    def get(self, key: str) -> AliasEntry | None:
        return self.entries.get(key)


@lru_cache(maxsize=8)
def load_aliases(path: str | Path | None = None) -> AliasTable:
    """Read (and cache) an alias table: ``name<TAB>type<TAB>alias|alias``
    lines, ``#`` comments. Raises :class:`pilar.errors.ConfigError` for a
    missing file or a malformed line."""
    from pilar.errors import ConfigError

    path = Path(path) if path else DEFAULT_ALIASES
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"alias table {path}: {exc}") from exc
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 3 or parts[1] not in ENTITY_TYPES:
            raise ConfigError(f"alias table {path}:{n}: expected name<TAB>type<TAB>aliases")
        rows.append((parts[0].strip(), parts[1], [a.strip() for a in parts[2].split("|")
                                                   if a.strip()]))
    return AliasTable(rows)


class EntityResolver:
    """Collects one document's mentions and clusters them into entities
    (PILAR App. E.2, within-document linking).

    Call :meth:`mention` for every candidate (it returns a mention number,
    or None when the text is not a name), :meth:`declare_alias` for aliases
    the document states, then :meth:`resolve` once.
    """

    MAX_BLOCK = 300
    """Fuzzy blocks (names sharing a 3-character token prefix) larger than
    this are skipped: the prefix is too common to separate anything."""

    def __init__(self, aliases: AliasTable, threshold: float = 0.75):
        self.aliases = aliases
        self.threshold = threshold
        self.surfaces: list[str] = []
        self.keys: list[str] = []
        self.types: list[str] = []
        self.supports: list[str | None] = []
        self.canonical: list[str | None] = []
        self.declared: list[tuple[str, str]] = []
        self.mention_entity: list[str] = []

    def mention(self, text: str, type_: str, support_id: str | None,
                cleaned: bool = False) -> int | None:
        """Register ``text`` as a mention of type ``type_`` in ``support_id``
        (None: no MENTIONED_IN edge). Returns its number, or None when
        ``text`` is not a name (``cleaned``: ``text`` already passed
        :func:`entity_surface`)."""
        surface = text if cleaned else entity_surface(text)
        if surface is None:
            return None
        key = normalise(surface)
        if len(key) < 2:
            return None
        canon = None
        entry = self.aliases.get(key)
        if entry is not None and compatible(type_, entry.type):
            canon, key = entry.name, normalise(entry.name)
            type_ = entry.type if family(type_) in (family(entry.type), "thing") \
                else type_
        self.surfaces.append(surface)
        self.keys.append(key)
        self.types.append(type_)
        self.supports.append(support_id)
        self.canonical.append(canon)
        return len(self.surfaces) - 1

    def declare_alias(self, name: str, alias: str) -> None:
        """Record that ``alias`` names the same entity as ``name``."""
        a, b = entity_surface(name), entity_surface(alias)
        if a and b and normalise(a) != normalise(b):
            self.declared.append((a, b))

    # -- clustering ---------------------------------------------------------
    def _nodes(self) -> tuple[list[list[int]], list[str], list[str]]:
        """Mentions grouped by (key, type family); a bare ``thing`` joins the
        key's most frequent family. Returns members, key and type per node."""
        by_key: dict[str, list[int]] = {}
        for i, key in enumerate(self.keys):
            by_key.setdefault(key, []).append(i)
        members: list[list[int]] = []
        keys: list[str] = []
        types: list[str] = []
        all_types = self.types
        for key, idxs in by_key.items():
            if len(idxs) == 1:
                members.append(idxs)
                keys.append(key)
                types.append(all_types[idxs[0]])
                continue
            fams = Counter(family(self.types[i]) for i in idxs
                           if self.types[i] != "thing")
            if len(fams) <= 1:
                groups = {"*": idxs}
            else:
                top = fams.most_common(1)[0][0]
                groups: dict[str, list[int]] = {}
                for i in idxs:
                    fam = family(self.types[i])
                    groups.setdefault(top if self.types[i] == "thing" else fam, []).append(i)
            for idx in groups.values():
                specific = Counter(self.types[i] for i in idx if self.types[i] != "thing")
                members.append(idx)
                keys.append(key)
                types.append(specific.most_common(1)[0][0] if specific else "thing")
        return members, keys, types

    def resolve(self) -> list[Entity]:
        """Cluster the mentions; returns the entities (ids, canonical names,
        types, aliases, mention supports) and fills :attr:`mention_entity`
        (entity id per mention number)."""
        members, keys, types = self._nodes()
        n = len(members)
        uf = UnionFind(n)
        by_key: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            by_key.setdefault(key, []).append(i)
        extra_aliases: dict[int, set[str]] = {}
        # declared aliases
        for name, alias in self.declared:
            a_nodes = by_key.get(normalise(name), [])
            b_nodes = by_key.get(normalise(alias), [])
            for x in a_nodes:
                extra_aliases.setdefault(x, set()).add(alias)
                for y in b_nodes:
                    if compatible(types[x], types[y]):
                        uf.union(x, y)
        # surname and acronym rules: a one-word name that is the last word, or
        # the acronym, of exactly one longer name
        last: dict[str, list[int]] = {}
        initials: dict[str, list[int]] = {}
        caps = {key for i, key in enumerate(keys) if " " not in key
                and self.surfaces[members[i][0]].replace(".", "").isupper()}
        for i, key in enumerate(keys):
            if " " in key:
                if types[i] == "person":
                    last.setdefault(key.rsplit(" ", 1)[1], []).append(i)
                if caps:
                    ac = acronym(self.surfaces[members[i][0]])
                    if len(ac) >= 3 and ac in caps:
                        initials.setdefault(ac, []).append(i)
        for i, key in enumerate(keys):
            if " " in key:
                continue
            cands = last.get(key, ()) if types[i] in ("person", "thing") else ()
            if len(cands) == 1:
                uf.union(i, cands[0])
                continue
            if key in initials:
                cands = [j for j in initials.get(key, ()) if compatible(types[i], types[j])]
                if len(cands) == 1:
                    uf.union(i, cands[0])
        self._fuzzy(keys, types, uf)
        return self._entities(members, types, uf, extra_aliases)

    def _fuzzy(self, keys: list[str], types: list[str], uf: UnionFind) -> None:
        """Union type-compatible nodes with :func:`similarity` >= threshold:
        names equal up to word order and generic words (grouped exactly), and
        near-identical spellings (rapidfuzz ``cdist`` within blocks of names
        sharing the 3-character prefix of their first or last word)."""
        def join(i: int, j: int) -> None:
            if compatible(types[i], types[j]) and uf.find(i) != uf.find(j) and \
                    similarity(keys[i], keys[j]) >= self.threshold:
                uf.union(i, j)

        cores: dict[str, list[int]] = {}
        blocks: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            words = key.split()
            core = [w for w in words if w not in GENERIC_WORDS and len(w) > 1]
            if core:
                cores.setdefault(" ".join(sorted(core)), []).append(i)
            if len(key) >= 4:
                for prefix in {words[0][:3], words[-1][:3]}:
                    blocks.setdefault(prefix, []).append(i)
        for group in cores.values():
            for x in range(1, len(group)):
                for y in range(x):
                    join(group[y], group[x])
        cutoff = int(self.threshold * 100)
        for block in blocks.values():
            if len(block) < 2 or len(block) > self.MAX_BLOCK:
                continue
            names = [keys[i] for i in block]
            scores = process.cdist(names, names, scorer=fuzz.ratio, score_cutoff=cutoff,
                                   dtype=np.uint8)
            for x, y in zip(*np.nonzero(np.triu(scores, 1))):
                join(block[int(x)], block[int(y)])

    def _entities(self, members: list[list[int]], types: list[str], uf: UnionFind,
                  extra_aliases: dict[int, set[str]]) -> list[Entity]:
        clusters: dict[int, list[int]] = {}
        for node in range(len(members)):
            clusters.setdefault(uf.find(node), []).append(node)
        self.mention_entity = [""] * len(self.surfaces)
        entities: list[Entity] = []
        for nodes in clusters.values():
            if len(nodes) == 1 and len(members[nodes[0]]) == 1 and not extra_aliases.get(
                    nodes[0]):
                i = members[nodes[0]][0]
                canon = self.canonical[i] or self.surfaces[i]
                eid = entity_id(self.types[i], canon)
                alias = () if normalise(self.surfaces[i]) == normalise(canon) \
                    else (self.surfaces[i],)
                entities.append(Entity(eid, canon, self.types[i], alias,
                                       (self.supports[i],) if self.supports[i] else ()))
                self.mention_entity[i] = eid
                continue
            idx = sorted(i for node in nodes for i in members[node])
            specific = Counter(self.types[i] for i in idx if self.types[i] != "thing")
            type_ = specific.most_common(1)[0][0] if specific else "thing"
            canon = next((self.canonical[i] for i in idx if self.canonical[i]), None)
            counts = Counter(self.surfaces[i] for i in idx)
            if canon is None:
                canon = max(counts, key=lambda s: (min(s.count(" ") + 1, 6), counts[s]))
            eid = entity_id(type_, canon)
            key = normalise(canon)
            aliases = {s for s in counts if normalise(s) != key}
            for node in nodes:
                aliases |= {a for a in extra_aliases.get(node, ()) if normalise(a) != key}
            mentions = tuple(dict.fromkeys(self.supports[i] for i in idx if self.supports[i]))
            entities.append(Entity(entity_id=eid, name=canon, type=type_,
                                   aliases=tuple(sorted(aliases))[:20], mentions=mentions))
            for i in idx:
                self.mention_entity[i] = eid
        # two clusters can land on one id (same canonical name and type): merge
        merged: dict[str, Entity] = {}
        for e in entities:
            if e.entity_id in merged:
                m = merged[e.entity_id]
                m.aliases = tuple(sorted(set(m.aliases) | set(e.aliases)))[:20]
                m.mentions = tuple(dict.fromkeys(m.mentions + e.mentions))
            else:
                merged[e.entity_id] = e
        return list(merged.values())
