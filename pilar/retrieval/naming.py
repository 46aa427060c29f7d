"""How questions, units and page titles name things, for bridge expansion
(:mod:`pilar.retrieval.bridges`, PILAR §3.4 multi-hop profile): a name found
as written or with other separators, the words that say what a mention is,
the kind of a page (incident reports, versions of a tariff) and the version
or model a question names."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from rapidfuzz import fuzz

from pilar.ingest.codes import codes
from pilar.ingest.names import normalise
from pilar.model import Unit
from pilar.retrieval.terms import tokens

__all__ = ["mention_context", "names_matcher", "names_version", "naming_words", "same_series",
           "siblings", "template", "title_key", "versions"]


def _name_regex(name: str) -> str | None:
    """The regex finding ``name`` as written or with other separators between
    its letter and digit groups (``VSC-65``, ``VSC 65``, ``vsc65``;
    ``Corvassa  Ardent``), not inside a longer word; None for a name
    without letters or digits."""
    parts = re.findall(r"[^\W\d_]+|\d+", name)
    if not parts:
        return None
    return r"(?<![^\W_])" + r"[\W_]*".join(map(re.escape, parts)) + r"(?![^\W_])"


@lru_cache(maxsize=65_536)
def _name_pattern(name: str) -> re.Pattern | None:
    """:func:`_name_regex` compiled, case-insensitive."""
    regex = _name_regex(name)
    return re.compile(regex, re.IGNORECASE) if regex is not None else None


_GROUP = re.compile(r"[^\W\d_]+|\d+")
_ALNUM = re.compile(r"[^\W_]+")


@lru_cache(maxsize=100_000)
def _text_key(text: str) -> tuple[str, frozenset[str]]:
    """``text`` as its words (runs of letters and digits) between spaces,
    lower case, each word's letter and digit groups joined by ``|``
    (``"VSC65 on QC-09"`` -> ``" vsc|65 on qc 09 "``); a word holding other
    word characters (``²``) is fenced by ``#``, so no name ends inside it;
    and the set of its groups."""
    words, seen = [], set()
    for word in _ALNUM.findall(text.lower()):
        groups = _GROUP.findall(word)
        seen.update(groups)
        key = "|".join(groups)
        words.append(key if sum(map(len, groups)) == len(word) else f"#{key}#")
    return f" {' '.join(words)} ", frozenset(seen)


@lru_cache(maxsize=100_000)
def _name_keys(name: str) -> tuple[str, ...]:
    """The ways :func:`_text_key` can hold ``name`` as whole words (the
    :func:`_name_regex` matches, found with ``in``): its groups with a space
    between, or ``|`` where a letter group meets a digit group (``VSC-65``
    is in ``" vsc 65 "`` and ``" vsc|65 "``)."""
    groups = _GROUP.findall(name.lower())
    if not groups:
        return ()
    keys = [groups[0]]
    for prev, group in zip(groups, groups[1:]):
        seps = (" ", "|") if prev[0].isdigit() != group[0].isdigit() else (" ",)
        keys = [k + sep + group for k in keys for sep in seps]
    return tuple(f" {k} " for k in keys)


def names_matcher(names: Iterable[str]):
    """``text -> bool``: does ``text`` name one of ``names`` (see
    :func:`_name_regex`: a code by its key, :func:`~pilar.ingest.codes.code_key`,
    a name by its words)? Substring tests on :func:`_text_key` for the
    names whose first group the text holds, no regex compiled per name (a
    chain search meets thousands)."""
    return _matcher(frozenset(names))


@lru_cache(maxsize=65_536)
def _matcher(names: frozenset[str]):
    """:func:`names_matcher` of a set of names, kept for the next search."""
    by_first: dict[str, set[str]] = {}
    for name in names:
        for key in _name_keys(name):
            by_first.setdefault(_GROUP.match(key, 1).group(), set()).add(key)
    if not by_first:
        return lambda text: False
    keys = tuple((g, tuple(ks)) for g, ks in by_first.items())

    def match(text: str) -> bool:
        key, groups = _text_key(text)
        for g, ks in keys:  # a few names: faster than intersecting the sets
            if g in groups:
                for k in ks:
                    if k in key:
                        return True
        return False
    return match


def template(section_paths: Iterable[tuple[str, ...]]) -> frozenset[str]:
    """The section headings of a page (the last name of each section path)
    with codes and digits taken out: what documents of one kind share (every
    incident report has "Findings", "Root cause", "Timeline")."""
    out = set()
    for path in section_paths:
        if path:
            name = path[-1]
            for surface, _ in codes(name):
                name = name.replace(surface, " ")
            key = normalise("".join(c for c in name if not c.isdigit()))
            if key:
                out.add(key)
    return frozenset(out)


def mention_context(unit: Unit, name: str) -> str:
    """The words that say what ``name`` is where ``unit`` mentions it: in a
    table row each cell holding it with its header (and the row's label,
    the first cell, in a two-column table of labels and values), in running
    text the five words before it and two after."""
    match = names_matcher([name])
    if unit.cells:
        out = []
        for i, cell in enumerate(unit.cells):
            if match(cell):
                out += [unit.headers[i] if i < len(unit.headers) else "", cell]
                if len(unit.cells) == 2 and i == 1:
                    out.append(unit.cells[0])
        return " ".join(out)
    found = _find(unit.text, name)
    if found is None:
        return ""
    before = unit.text[:found[0]].split()[-5:]
    after = unit.text[found[1]:].split()[:2]
    return " ".join(before + after)


def _find(text: str, name: str) -> tuple[int, int] | None:
    """``(start, end)`` characters of the first place ``text`` names
    ``name`` (as :func:`names_matcher` finds it), or None."""
    lowered = text.lower()
    if len(lowered) != len(text):  # "İ" lowers to two characters: offsets would move
        found = (pattern := _name_pattern(name)) and pattern.search(text)
        return found.span() if found else None
    key, _ = _text_key(text)
    places = [(at, k) for k in _name_keys(name) if (at := key.find(k)) >= 0]
    if not places:
        return None
    at, k = min(places)
    first = key.count(" ", 0, at + 1) - 1
    spans = [m.span() for m in _ALNUM.finditer(lowered)]
    return spans[first][0], spans[first + k.count(" ") - 2][1]


def title_key(title: str) -> str:
    """A document title with its codes and digits taken out, normalised:
    what versions and sibling models share ("ONT terminal handling charges",
    "Crane – Maintenance log", "Vostrand Megalift ship-to-shore crane –
    Datasheet")."""
    for surface, _ in codes(title):
        title = title.replace(surface, " ")
    return normalise("".join(c for c in title if not c.isdigit()))


@lru_cache(maxsize=65_536)
def same_series(a: str, b: str) -> bool:
    """Are two :func:`title_key` titles of one series: alike once codes and
    digits are out (rapidfuzz ratio >= 85; an empty key is of none)? Two
    versions of a charter party, the minutes of two meetings, the
    datasheets of two sibling models. Kept for the next search."""
    return bool(a and b) and fuzz.ratio(a, b) >= 85


@lru_cache(maxsize=65_536)
def siblings(a: tuple[str, frozenset[str]], b: tuple[str, frozenset[str]]) -> bool:
    """Are two pages, as ``(title_key, template)``, of one kind: titles of
    one series (:func:`same_series`), or at least three section headings
    shared and half of all (Jaccard >= 0.5)? Two incident reports, two
    versions of a tariff, the particulars of sister ships: a chain never
    holds two siblings (the second would be the distractor beside the page
    it holds). Kept for the next search."""
    if same_series(a[0], b[0]):
        return True
    shared = len(a[1] & b[1])
    return shared >= 3 and shared >= 0.5 * len(a[1] | b[1])


_WORD = re.compile(r"[^\W_]+(?:[-./][^\W_]+)*")
_DIGITS = re.compile(r"\d{3,}")


def naming_words(question: str, names: list[str]) -> set[str]:
    """The words (stemmed) of the question's ``names`` and the word just
    before each where the question writes it ("incident" of "incident
    IR-ONT-24-131", "call" of "call VC-24-1190"): they say which thing the
    question starts from, not what it asks of the next one."""
    out = {t for n in names for t in tokens(n)}
    for name in names:
        pattern = _name_pattern(name)
        for found in (pattern.finditer(question) if pattern is not None else ()):
            before = question[:found.start()].split()[-1:]
            out.update(tokens(" ".join(before)))
    return out


def asked_text(question: str, names: list[str]) -> str:
    """The question without its :func:`naming_words` ("In which town is the
    maker of RTG-27 headquartered?" -> "In which town is the maker
    headquartered?"): what it asks of a chain's last document, which by
    the design of a bridge question does not name the thing it starts from."""
    naming = naming_words(question, names)
    kept = [w for w in question.split() if not set(tokens(w)) <= naming or not tokens(w)]
    return " ".join(kept)


@lru_cache(maxsize=65_536)
def versions(text: str) -> frozenset[str]:
    """What names a version or model in ``text``: its words holding a digit
    (``2024``, ``TX-5``, ``CN-12/2024``), lower case, and their runs of
    three or more digits (``VX-220`` is also ``220``). Kept for the next search."""
    words = {w.lower() for w in _WORD.findall(text) if any(c.isdigit() for c in w)}
    return frozenset(words | {d for w in words for d in _DIGITS.findall(w)})


def names_version(named: frozenset[str], title: str, other: str) -> bool:
    """Does the question (its :func:`versions`, ``named``) name ``title``'s
    version or model and not ``other``'s: a version of one title that the
    other lacks is in the question, and none of the other's is? ("under the
    2024 tariff": the 2024 tariff, not the 2023 one; "the VX-220 pump": the
    Verta 220's datasheet, not the Verta 160's; "from 20 ft to 45 ft" names
    neither TL-40 nor TL-45)."""
    mine, theirs = versions(title), versions(other)
    return bool((mine - theirs) & named) and not ((theirs - mine) & named)
