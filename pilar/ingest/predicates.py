"""The closed predicate inventory (PILAR §3.2, App. E.4: "accepted assertions
are normalized to the shared predicate inventory").

The inventory is a TOML file (default: ``predicates.toml`` beside this
module; ``Settings.predicates_path`` / ``PILAR_PREDICATES_PATH`` overrides
it): one table per canonical predicate with its ``synonyms``, the entity
type of its object (``object``, or ``"value"`` for literals) and optionally
the type it implies for its subject.

Normalisation (:func:`predicate_key`): NFKC, lower case, a trailing ``(s)``
and any other parenthesised part dropped (kept as a note, e.g. the ``2010``
of ``"Population (2010)"``), punctuation to spaces, whitespace collapsed,
then a leading auxiliary (``is``, ``was``, ``are``, ``were``, ``has been``)
stripped. A key is looked up as is, then singularised (trailing ``s``).

How each modality uses it:

- text and visual assertions: :meth:`PredicateInventory.closed` maps to a
  canonical name, or to ``related_to`` (the original phrase is kept in the
  assertion's qualifiers as ``predicate_text``): the inventory stays closed;
- table assertions: :meth:`PredicateInventory.for_header` maps a column
  header path to a canonical name when its last level is a synonym, else to
  the snake_case header path (``"peak_chart_positions.us"``). Table columns
  are an open vocabulary; inventing a canonical name for every header would
  lose the header's meaning, while the snake_case path stays exact and
  deterministic. Headerless columns read ``column_<n>`` (1-based).
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

__all__ = ["PredicateInventory", "load_inventory", "predicate_key", "snake", "FALLBACK",
           "DEFAULT_PATH"]

DEFAULT_PATH = Path(__file__).with_name("predicates.toml")
FALLBACK = "related_to"
"""The predicate of a text or visual assertion whose phrase is not in the inventory."""

_PARENS = re.compile(r"\(([^()]*)\)")
_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)
_AUX = re.compile(r"^(?:is|was|are|were|has been|have been|had been|is being|be)\s+")


def _split_note(text: str) -> tuple[str, str]:
    notes = [m.group(1).strip() for m in _PARENS.finditer(text)
             if m.group(1).strip() and m.group(1).strip().lower() != "s"]
    return _PARENS.sub(" ", text), "; ".join(notes)


def predicate_key(text: str) -> str:
    """The normalised lookup key of a predicate phrase or header (see the
    module docstring); ``""`` for text without letters or digits."""
    text = unicodedata.normalize("NFKC", text).lower()
    text, _ = _split_note(text)
    text = " ".join(_NON_WORD.sub(" ", text).replace("_", " ").split())
    return _AUX.sub("", text)


def snake(text: str) -> str:
    """``"Peak chart positions"`` -> ``"peak_chart_positions"`` (NFKC, lower
    case, every run of non-word characters one ``_``, accents kept)."""
    text = unicodedata.normalize("NFKC", text).lower()
    return "_".join(_NON_WORD.sub(" ", text).replace("_", " ").split())


@dataclass(slots=True)
class PredicateInventory:
    """Canonical predicates with their synonyms and types.

    ``object_types[name]`` is the entity type of the predicate's object
    (``"value"`` for literals); ``subject_types[name]`` the subject type it
    implies, when any. ``verb_phrases`` are the multi-word synonyms that end
    in a preposition (``"born in"``, ``"founded by"``), used by the
    rule-based text extractor after a copula.
    """

    synonyms: dict[str, str]
    object_types: dict[str, str]
    subject_types: dict[str, str] = field(default_factory=dict)
    verb_phrases: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        """Canonical predicate names, in file order."""
        return list(self.object_types)

    def lookup(self, phrase: str) -> str | None:
        """The canonical name of ``phrase`` (a name or a synonym), or None."""
        key = predicate_key(phrase)
        if not key:
            return None
        found = self.synonyms.get(key)
        if found is None and len(key) > 3 and key.endswith("s"):
            found = self.synonyms.get(key[:-1])
        return found

    def closed(self, phrase: str) -> tuple[str, bool]:
        """``(canonical, known)``: the canonical name, or ``(FALLBACK, False)``
        when ``phrase`` is not in the inventory (text and visual assertions)."""
        found = self.lookup(phrase)
        return (found, True) if found else (FALLBACK, False)

    def for_header(self, path: tuple[str, ...], col: int) -> tuple[str, str]:
        """``(predicate, note)`` for a table column with header ``path``:
        the canonical name when the last level is a synonym, else the
        snake_case path joined by ``"."``; ``column_<col + 1>`` when the
        column has no header. ``note`` is any parenthesised part of the
        last level (``"2010"`` for ``"Population (2010)"``)."""
        levels = [p for p in path if p and p.strip()]
        if not levels:
            return f"column_{col + 1}", ""
        _, note = _split_note(levels[-1])
        found = self.lookup(levels[-1])
        if found:
            return found, note
        parts = [snake(p) for p in levels]
        return ".".join(p for p in parts if p) or f"column_{col + 1}", note

    def object_type(self, predicate: str) -> str:
        """Entity type of ``predicate``'s object; ``"thing"`` for predicates
        outside the inventory (open table headers)."""
        return self.object_types.get(predicate, "thing")


@lru_cache(maxsize=8)
def load_inventory(path: str | Path | None = None) -> PredicateInventory:
    """Read (and cache) the inventory at ``path`` (default :data:`DEFAULT_PATH`).

    Raises :class:`pilar.errors.ConfigError` for a missing or malformed file
    or a synonym claimed by two predicates.
    """
    from pilar.errors import ConfigError

    path = Path(path) if path else DEFAULT_PATH
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"predicate inventory {path}: {exc}") from exc
    synonyms: dict[str, str] = {}
    object_types: dict[str, str] = {}
    subject_types: dict[str, str] = {}
    phrases: list[str] = []
    for name, spec in data.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("synonyms", []), list):
            raise ConfigError(f"predicate inventory {path}: [{name}] needs a synonyms list")
        object_types[name] = str(spec.get("object", "value"))
        if spec.get("subject"):
            subject_types[name] = str(spec["subject"])
        for phrase in [name.replace("_", " "), *spec.get("synonyms", [])]:
            key = predicate_key(str(phrase))
            if not key:
                continue
            if synonyms.get(key, name) != name:
                raise ConfigError(f"predicate inventory {path}: {phrase!r} is a synonym of "
                                  f"both {synonyms[key]} and {name}")
            synonyms[key] = name
            words = key.split()
            if len(words) > 1 and words[-1] in ("in", "by", "of", "on", "at", "for", "to",
                                                "from", "with", "as"):
                phrases.append(key)
    ordered = sorted(set(phrases), key=lambda p: (-len(p), p))
    return PredicateInventory(synonyms, object_types, subject_types, tuple(ordered))
