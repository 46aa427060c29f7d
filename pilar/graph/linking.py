"""Cross-document entity linking: SAME_AS edges (PILAR App. E.2 "cross-document
same_as edges are added when ... alias overlap, type compatibility, and
descriptor similarity jointly indicate that they refer to the same entity";
App. E.5 graph assembly).

Entities are global within a collection: the same type and normalised
canonical name is one node whatever the document of that collection
(:func:`pilar.ingest.names.entity_id`, prefixed with the collection outside
``default``: :func:`in_collection`); collections never share one, nor a
link. SAME_AS links *different* ids that name the same thing. For each
entity of a new document that is not stored yet (or brings aliases the
stored node lacks), :func:`link_across` fetches candidates of the same
collection by full-text blocking (``GraphStore.entity_candidates``, on the
name and up to three aliases) and scores each type-compatible one with
:func:`match`:

======================  =====  ====================================================
method                  score  when
======================  =====  ====================================================
``name``                1.0    same normalised name of two or more words,
                               different (compatible) types
``alias``               0.95   one's name (two or more words) is the other's
                               name or alias
``alias``               0.9    the same, with a one-word name, both of the same
                               specific type (not ``thing``, not ``person``: people
                               share surnames)
``abbreviation``        0.9    one is the acronym (3+ letters) of the other
                               (``NFL``), same specific type
``fuzzy``               sim.   :func:`~pilar.ingest.names.similarity` >=
                               ``Settings.link_threshold_cross`` (0.8); generic
                               extra words (``FC``) only between teams or
                               between organizations (across documents a
                               middle initial may be another person)
======================  =====  ====================================================

Never linked: identifier codes (:mod:`pilar.ingest.codes`: one key is one
entity, and ``QC-09`` is not ``QC-08``), titles of works (many songs and films share a title), generic
event names (``World Championships``, ``European Cup``: of which sport?),
and people by fuzzy spelling (``Jonatan Johansson`` the Finnish striker is
not ``Jonathan Johansson`` the Swedish goalkeeper). One-word names link only
through the alias and abbreviation rules: the same one-word name under two
types (``Utah`` the team, ``Utah`` the university) or one edit apart
(``German`` / ``Germany``) is too ambiguous (same type and name is one node
anyway). At most :data:`MAX_LINKS` links per entity, best first. Edges point
from the new entity to the stored one.
"""

from __future__ import annotations

from dataclasses import replace

from pilar.config import Settings
from pilar.ingest.codes import CODE_TYPE
from pilar.ingest.names import acronym, compatible, normalise, similarity
from pilar.ingest.quantities import (BAND_TYPE, QUANTITY_TYPE, compatible_dimensions, holds,
                                     parse_band, parse_quantity)
from pilar.model import DEFAULT_COLLECTION, Entity, ParsedDocument, SameAs

__all__ = ["in_collection", "link_across", "link_bands", "link_batch", "match", "MAX_LINKS"]

MAX_LINKS = 3
"""SAME_AS links kept per new entity."""
MAX_ALIAS_QUERIES = 3
GENERIC_EVENT_WORDS = frozenset("""world european asian african american pan pacific national
international continental junior juniors youth senior indoor outdoor women womens men mens
mixed open championship championships cup games series league tournament final finals grand
prix masters trophy classic invitational regional regionals division conference race""".split())


def _keys(e: Entity) -> set[str]:
    return {k for k in (normalise(x) for x in (e.name, *e.aliases)) if k}


def _specific(a: str, b: str) -> bool:
    return a == b and a != "thing"


def _ambiguous(e: Entity, key: str) -> bool:
    """Titles of works (many songs and films share one) and generic event
    names (``World Championships``: of which sport?) are never linked."""
    return e.type == "work" or all(w in GENERIC_EVENT_WORDS for w in key.split())


def match(a: Entity, b: Entity, threshold: float = 0.8) -> tuple[float, str] | None:
    """``(score, method)`` when ``a`` and ``b`` (different ids) name the
    same entity, else None (see the module docstring's table)."""
    if a.entity_id == b.entity_id or not compatible(a.type, b.type) or \
            CODE_TYPE in (a.type, b.type):
        return None
    ka, kb = normalise(a.name), normalise(b.name)
    if not ka or not kb or _ambiguous(a, ka) or _ambiguous(b, kb):
        return None
    if ka == kb:
        return (1.0, "name") if " " in ka else None
    shared = ({kb} & _keys(a)) | ({ka} & _keys(b))
    if any(" " in k for k in shared):
        return 0.95, "alias"
    if shared and _specific(a.type, b.type) and a.type != "person":
        return 0.9, "alias"
    if _specific(a.type, b.type):
        for short, long_ in ((a, b), (b, a)):
            s = normalise(short.name)
            if " " not in s and short.name.replace(".", "").isupper() and len(s) >= 3 \
                    and acronym(long_.name) == s:
                return 0.9, "abbreviation"
    if " " not in ka and " " not in kb or "person" in (a.type, b.type):
        return None
    score = similarity(ka, kb, extra_words=_specific(a.type, b.type)
                       and a.type in ("team", "organization"))
    if score >= threshold:
        return round(score, 4), "fuzzy"
    return None


def in_collection(parsed: ParsedDocument) -> None:
    """Put ``parsed``'s entities in its document's collection: their
    ``collection`` set and, outside ``default``, their ids (and the subject
    and object ids of its assertions) prefixed with ``"<collection>:"``, so
    documents of two collections never share an entity. Entities already in
    the collection are left as they are."""
    collection = parsed.document.collection
    prefix = "" if collection == DEFAULT_COLLECTION else f"{collection}:"
    ids = {}
    for e in parsed.entities:
        if e.collection != collection:
            ids[e.entity_id] = prefix + e.entity_id
            e.entity_id, e.collection = ids[e.entity_id], collection
    if not prefix:
        return
    for a in parsed.assertions:
        a.subject_entity = ids.get(a.subject_entity, a.subject_entity)
        a.object_entity = ids.get(a.object_entity, a.object_entity)


def link_across(parsed: ParsedDocument, graph, settings: Settings | None = None
                ) -> list[SameAs]:
    """SAME_AS links from ``parsed.entities`` to entities of its collection
    already in ``graph`` (any :class:`~pilar.graph.GraphStore`), best first
    per entity (call :func:`in_collection` first).

    Reads the store only (``get_entities``, ``entity_candidates``); the caller
    writes the links with the document. Entities of the document itself are
    never targets. Store errors propagate (:class:`~pilar.errors.StoreError`).
    """
    settings = settings or Settings()
    entities = parsed.entities
    if not entities:
        return []
    own = {e.entity_id for e in entities}
    stored = graph.get_entities(sorted(own))
    threshold = settings.link_threshold_cross
    links: list[SameAs] = []
    for e in entities:
        if e.type == CODE_TYPE:  # codes link by their key (the id) alone
            continue
        known = stored.get(e.entity_id)
        if known is not None and set(e.aliases) <= set(known.aliases):
            continue
        names = list(dict.fromkeys((e.name, *e.aliases[:MAX_ALIAS_QUERIES])))
        candidates: dict[str, Entity] = {}
        for name in names:
            for c in graph.entity_candidates(name, settings.link_candidates,
                                             [parsed.document.collection]):
                if c.entity_id not in own:
                    candidates.setdefault(c.entity_id, c)
        scored = []
        for c in candidates.values():
            found = match(e, c, threshold)
            if found:
                scored.append((found[0], c.entity_id, found[1]))
        scored.sort(key=lambda t: (-t[0], t[1]))
        links.extend(SameAs(e.entity_id, target, score, method)
                     for score, target, method in scored[:MAX_LINKS])
    return links + link_bands(parsed, graph, set(stored))


BAND_CANDIDATES = 200
"""Entities read per field label when linking quantities and bands."""


def _labelled(e: Entity) -> str:
    """The label of a quantity or band entity: its alias ``"<label>: <name>"``."""
    suffix = f": {e.name}"
    return next((a[: -len(suffix)] for a in e.aliases if a.endswith(suffix)), "")


def link_bands(parsed: ParsedDocument, graph, stored: set[str] = frozenset()) -> list[SameAs]:
    """SAME_AS links (score 1.0, method ``band``) from each quantity entity
    of ``parsed`` to the stored bands of its collection of a compatible
    dimension that hold its value, and from each of its bands to the stored
    quantities they hold (:mod:`pilar.ingest.quantities`), but for the
    entities of ``stored`` (already in the graph: linked when they were
    written). One candidate read per distinct label
    (``GraphStore.entity_candidates`` on the label's words)."""
    own = {e.entity_id for e in parsed.entities}
    groups: dict[tuple[str, str], list[Entity]] = {}
    for e in parsed.entities:
        if e.type in (QUANTITY_TYPE, BAND_TYPE) and e.entity_id not in stored \
                and (label := _labelled(e)):
            groups.setdefault((e.type, label), []).append(e)
    links = []
    for (type_, label), group in groups.items():
        wanted = BAND_TYPE if type_ == QUANTITY_TYPE else QUANTITY_TYPE
        for c in graph.entity_candidates(label, BAND_CANDIDATES, [parsed.document.collection]):
            if c.type != wanted or c.entity_id in own or \
                    not compatible_dimensions(label, _labelled(c)):
                continue
            for e in group:
                q, b = (e, c) if type_ == QUANTITY_TYPE else (c, e)
                value, band = parse_quantity(q.name), parse_band(b.name)
                if value and band and holds(band, *value):
                    links.append(SameAs(e.entity_id, c.entity_id, 1.0, "band"))
    return links


def link_batch(docs: list[ParsedDocument], graph, settings: Settings | None = None) -> None:
    """Set ``same_as`` on each of ``docs``, documents written together in one
    batch, as :func:`link_across` would have had each been stored before the
    next: document ``i`` links to entities of its collection in ``graph``
    and in ``docs[:i]`` (call :func:`in_collection` on each first). Store
    errors propagate. The store's candidates of every name the documents
    may look up are read first, in one read per collection
    (``GraphStore.entity_candidates_many``)."""
    settings = settings or Settings()
    earlier = _WithEarlier(graph)
    names: dict[str, dict[str, None]] = {}
    for parsed in docs:
        wanted = names.setdefault(parsed.document.collection, {})
        for e in parsed.entities:
            if e.type != CODE_TYPE:
                wanted.update(dict.fromkeys((e.name, *e.aliases[:MAX_ALIAS_QUERIES])))
    for collection, wanted in names.items():
        earlier.prefetch(list(wanted), settings.link_candidates, [collection])
    for parsed in docs:
        parsed.same_as = link_across(parsed, earlier, settings)
        earlier.add(parsed.entities)


def _words(e: Entity) -> set[str]:
    return {w for k in _keys(e) for w in k.split()}


class _WithEarlier:
    """The reads :func:`link_across` makes, on ``graph`` as it will be once
    the ``earlier`` entities of a batch (:meth:`add`) are written: those
    found by id, and among the candidates of a name when they share a
    normalised word with it (the store's full-text blocking, in memory, on
    an index of their words: a scan of every earlier entity per name made
    linking quadratic in the batch, 2.6 of the 5.0 s the writes of 12 PDFs
    took)."""

    def __init__(self, graph):
        self.graph = graph
        self.earlier: dict[str, Entity] = {}
        self._by_word: dict[str, set[str]] = {}
        self._position: dict[str, int] = {}
        self._read: dict[tuple, list[Entity]] = {}

    def prefetch(self, names: list[str], limit: int, collections: list[str]) -> None:
        """Read the store's candidates of ``names`` now, in one read."""
        found = self.graph.entity_candidates_many(names, limit, collections)
        self._read.update(((name, limit, tuple(collections)), c) for name, c in zip(names, found))

    def add(self, entities: list[Entity]) -> None:
        """Count ``entities`` as written (aliases merged into a known id's)."""
        for e in entities:
            known = self.earlier.get(e.entity_id)
            e = e if known is None else replace(
                known, aliases=tuple(dict.fromkeys((*known.aliases, *e.aliases))))
            self.earlier[e.entity_id] = e
            self._position.setdefault(e.entity_id, len(self._position))
            for word in _words(e):
                self._by_word.setdefault(word, set()).add(e.entity_id)

    def get_entities(self, entity_ids: list[str]) -> dict[str, Entity]:
        out = self.graph.get_entities(entity_ids)
        for eid in entity_ids:
            e = self.earlier.get(eid)
            if e is not None:
                stored = out.get(eid)
                out[eid] = e if stored is None else replace(
                    stored, aliases=tuple(dict.fromkeys((*stored.aliases, *e.aliases))))
        return out

    def entity_candidates(self, name: str, limit: int = 20,
                          collections: list[str] | None = None) -> list[Entity]:
        found = self._read.get((name, limit, None if collections is None else tuple(collections)))
        if found is None:
            found = self.graph.entity_candidates(name, limit, collections)
        seen = {c.entity_id for c in found}
        ids = set().union(*(self._by_word.get(w, ()) for w in normalise(name).split()))
        more = [self.earlier[eid] for eid in sorted(ids - seen, key=self._position.__getitem__)
                if collections is None or self.earlier[eid].collection in collections]
        return found + more[:limit]
