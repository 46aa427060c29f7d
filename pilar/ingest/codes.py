"""Identifier codes: the names cross-document chains run through.

An enterprise corpus links its documents by identifiers more than by proper
names: an incident report names crane ``QC-09`` and call ``VC-24-1183``, the
equipment register gives the crane's model code ``VSC-65``, the datasheet of
that model carries it; a manifest row holds container ``CVSU 481207 3`` and
tariff code ``VT 08.113``; a roster lists a supervisor's initials ``TVR``
that an incident report signs with. :func:`codes` finds such identifiers in
any text (paragraphs, headings, table rows) and :func:`code_entities` turns
a document's into entities of type ``code`` whose id is the code's key
(:func:`code_key`: upper case with the separators dropped, so ``VSC-65``,
``VSC 65`` and ``VSC65`` are one entity in every document). Codes link
documents by that id alone, never by fuzzy spelling (``QC-09`` is not
``QC-08``). Query-time bridge expansion (:mod:`pilar.retrieval.bridges`)
follows them; how many documents mention a code is its specificity.

This is our addition to PILAR's entity layer (§3.2, App. E.2: "lexical
variants are normalized with alias tables and rewrite rules"): codes are the
entities the chains of multi-hop questions need (§3.4, multi-hop profile).

What counts as a code, in the text as written:

- capitals and digits joined by ``-``, ``/`` or ``.``, at least one of
  each (a date or a range of numbers is not a code) (``QC-09``, ``IR-ONT-24-117``,
  ``CN-12/2024``, ``SB-GTX5-07``, ``B-52``);
- one word of capitals and digits mixed (``CTX5``, ``VQAR7``, ``40RH``,
  ``424N``, ``F1``);
- a capitalised prefix of 2-5 capitals followed by one or two groups of
  digits (``IMO 9811427``, ``CVSU 481207 3``, ``VT 08.113``, ``UN 1993``),
  unless the prefix is a currency (``EUR 182.00`` is an amount);
- an acronym or initials: one word of 3-6 capitals (``TVR``, ``CVL``,
  ``UEFA``), not a Roman numeral or a currency, and not in a text written
  in capitals (a heading in capitals is not a row of acronyms);
- a run of 6 or more digits standing alone (``9811427``), and the digit
  group of 6 or more of a prefixed code (``IMO 9811427`` is also
  ``9811427``): registers often give the number without its prefix.
"""

from __future__ import annotations

import re
from collections import Counter

from pilar.model import Entity, Support

__all__ = ["codes", "code_key", "code_entities", "is_code", "CODE_TYPE"]

CODE_TYPE = "code"
"""The entity type of identifier codes."""

_CURRENCIES = frozenset("""AED ARS AUD BGN BRL CAD CHF CLP CNY COP CZK DKK EGP EUR GBP HKD HUF IDR
ILS INR ISK JPY KRW MXN MYR NGN NOK NZD PEN PHP PKR PLN RON RUB SAR SEK SGD THB TRY TWD UAH USD
VND ZAR""".split())
_ROMAN = re.compile(r"^M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})$")
_CODE = re.compile(r"""
    (?<![\w./-])
    (?:
        (?P<joined>[A-Z0-9][A-Z0-9]*(?:[-/.][A-Z0-9]+)+)
      | (?P<prefixed>[A-Z]{2,5}(?:\ \d+(?:[./]\d+)*){1,2})
      | (?P<word>[A-Z0-9]*(?:[A-Z]\d|\d[A-Z])[A-Z0-9]*)
      | (?P<acronym>[A-Z]{3,6})
      | (?P<number>\d{6,})
    )
    (?![\w-]|[.,/]\d)
""", re.VERBOSE)
_SEPARATORS = re.compile(r"[^0-9A-Za-z]+")


def is_code(entity_id: str) -> bool:
    """Is ``entity_id`` a code entity's (``code:<key>``, or
    ``<collection>:code:<key>`` outside the default collection)?"""
    return entity_id.startswith(CODE_TYPE + ":") or f":{CODE_TYPE}:" in entity_id


def code_key(code: str) -> str:
    """The matching key of a code: upper case, every character that is not
    a letter or digit dropped (``"VSC-65"``, ``"vsc 65"`` -> ``"VSC65"``)."""
    return _SEPARATORS.sub("", code).upper()


def codes(text: str) -> list[tuple[str, str]]:
    """The codes in ``text`` as ``[(surface, key)]`` in order of appearance
    (see the module docstring for what counts); a prefixed code with a
    digit group of 6 or more also gives that group's key. Repeats kept."""
    out: list[tuple[str, str]] = []
    shouted = None
    for m in _CODE.finditer(text):
        surface, kind = m.group(0), m.lastgroup
        if kind == "joined":
            if not any(c.isdigit() for c in surface) or not any(c.isalpha() for c in surface):
                continue  # a date, a range or a decimal, not a code
        elif kind == "prefixed":
            if surface.split(" ", 1)[0] in _CURRENCIES:
                continue
        elif kind == "acronym":
            if shouted is None:
                shouted = _shouted(text)
            if shouted or surface in _CURRENCIES or _ROMAN.match(surface):
                continue
        out.append((surface, code_key(surface)))
        if kind in ("prefixed", "joined"):
            out.extend((g, g) for g in re.findall(r"\d{6,}", surface) if g != code_key(surface))
    return out


def _shouted(text: str) -> bool:
    """Is ``text`` written in capitals (a heading or a shouted line: fewer
    than one letter in five lower case), so its capitalised words are not
    acronyms?"""
    letters = sum(c.isalpha() for c in text)
    return letters > 6 and sum(c.islower() for c in text) < 0.2 * letters


def code_entities(supports: list[Support]) -> list[Entity]:
    """One ``code`` entity per distinct code key in ``supports`` (every
    kind: paragraphs, headings, rows, captions...), named by its most
    frequent surface, the other surfaces as aliases (at most 20), mentioned
    in the supports that hold it (document order). Id ``code:<key lower>``."""
    surfaces: dict[str, Counter[str]] = {}
    mentions: dict[str, dict[str, None]] = {}
    for s in supports:
        for surface, key in codes(s.text):
            surfaces.setdefault(key, Counter())[surface] += 1
            mentions.setdefault(key, {})[s.support_id] = None
    out = []
    for key, counts in surfaces.items():
        name = max(counts, key=lambda x: (counts[x], -len(x), x))
        aliases = tuple(sorted(x for x in counts if x != name))[:20]
        out.append(Entity(f"{CODE_TYPE}:{key.lower()}", name, CODE_TYPE, aliases,
                          tuple(mentions[key])))
    return out
