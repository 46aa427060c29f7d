"""Names: normalisation, name tests, proper-name spans in running text and
name similarity (PILAR App. E.2 "lexical variants are normalized with alias
tables and rewrite rules"; the linking itself is :mod:`pilar.ingest.entities`
within a document and :mod:`pilar.graph.linking` across documents).

- :func:`normalise` — the matching key of a name: Unicode NFKC, reference
  marks (``[1]``, ``†``) dropped, dotted abbreviations joined (``U.S.`` ->
  ``us``), accents stripped, case folded, ``&`` read ``and``, punctuation to
  spaces, whitespace collapsed, a leading ``the`` dropped.
- :func:`entity_surface` — is a table cell or span a name? (letters, an
  upper-case start, at most 8 words and 80 characters, not a date, number
  or stock value such as ``"Yes"`` or ``"N/A"``).
- :func:`capitalised_spans`, :func:`model_names` and :func:`alias_pairs` —
  mentions in running text, the models they name with a number
  (``Megalift 65``), and the aliases text declares: parentheses (``National Football
  League (NFL)``), "also known as", "a.k.a.", "better known as", "originally".
- :func:`similarity` — rapidfuzz ratio with guards against names that
  differ in a whole word or a number.
- Types: :data:`ENTITY_TYPES`; ``thing`` is compatible with every type,
  ``country`` with ``place``, ``team`` with ``organization``
  (:func:`compatible`). Entity ids: :func:`entity_id`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

__all__ = ["ENTITY_TYPES", "compatible", "family", "normalise", "clean_surface",
           "entity_surface", "capitalised_spans", "model_names", "alias_pairs", "acronym",
           "similarity", "entity_id", "GENERIC_WORDS", "proper_name"]

ENTITY_TYPES = ("person", "country", "place", "team", "organization", "work", "thing")
_FAMILY = {"country": "place", "place": "place", "team": "organization",
           "organization": "organization", "person": "person", "work": "work"}

_REFS = re.compile(r"\[[^\[\]]{0,30}\]")
_MARKS = re.compile(r"[†‡§¶*#^‹›]+")
_QUOTES = re.compile(r"[\"“”„«»]")
_DOTTED = re.compile(r"(?<![\w.])(?:[^\W\d_]\.){2,}")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_DIGITS = re.compile(r"\d+")
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|"
           "november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DATE = re.compile(rf"(?i)^(?:(?:\d{{1,2}}\s+)?(?:{_MONTHS})\.?(?:\s+\d{{1,2}})?(?:,?\s*\d{{2,4}})?"
                   rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTHS})\.?(?:\s+\d{{2,4}})?)$")
_STOP_VALUES = frozenset("""
yes no n/a na none nil tba tbd tbc unknown retired won lost draw drew dnf dns dnq dsq ret
nc total totals vacant withdrawn cancelled canceled bye walkover w/o forfeit pending void
scratched disqualified eliminated active inactive defunct various other others male female
men women mixed single double home away neutral present current former new old final
semifinal semi-final quarterfinal quarter-final round group pool heat heats monday tuesday
wednesday thursday friday saturday sunday unreleased promotional instrumental""".split()) | {
    "did not qualify", "not held", "see below", "see above", "non-album single",
    "non album single", "n a", "to be announced", "not applicable",
    # event categories: a discipline, not a named entity
    "singles", "doubles", "men's singles", "women's singles", "men's doubles",
    "women's doubles", "mixed doubles", "boys' singles", "girls' singles", "boys' doubles",
    "girls' doubles", "team event", "relay", "mixed team", "individual", "pairs"}
_LEAD_STOP = frozenset("""in on at after during before when while his her their its this that
these those a an he she it they we i as for from with by since following although however
then there but and or if despite upon under between both each other many some several all
most also our my your what which who where why how to of not no yes after although though
once early late during throughout later meanwhile today during additionally furthermore
moreover following under according because unlike like until""".split())
_CONNECT = frozenset("of the de del da di von van der den du la le y al bin ibn dos das do "
                     "e".split())
_ABBREV = frozenset("st mr mrs ms dr jr sr co inc ltd mt ft gen col lt sgt capt rev hon "
                    "prof no vs corp bros".split())
GENERIC_WORDS = frozenset("fc afc cf sc ac club inc ltd co corp plc llc sv bk if fk sk ss cd ud "
                          "sd cs".split())
_ALIAS_CUES = re.compile(r"(?i)\b(?:also known as|better known as|commonly known as|"
                         r"known professionally as|professionally known as|a\.?k\.?a\.?|"
                         r"nicknamed|formerly known as|formerly|originally|previously|"
                         r"born|n[ée]e|real name|birth name|officially)\s+")
_PAREN = re.compile(r"\(([^()]{2,80})\)")
_HYPHEN_LOW = re.compile(r"-(?=[a-z])")
_LEAD_MARK = re.compile(r"(?i)^(?:@|vs\.?|v\.)\s*(?=[^\W\d_])")
_SHORT_PAREN = re.compile(r"\s*\([^()]{0,4}\)$")
_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$")
_MODEL_NUMBER = re.compile(r" (\d{1,4}) (?P<next>[a-z][\w\-]*|\()")
_LABEL_WORDS = frozenset("""section table figure fig chapter page part step phase level stage
round week day game match season episode series group division class grade type category item
note appendix annex schedule volume vol no number line row column unit version rev revision
issue edition book act scene verse lap leg heat race pool top route platform gate pier berth
block zone area room floor exit junction""".split())
_CURRENCIES = frozenset("eur usd gbp nok sek dkk chf jpy cny aud cad nzd inr rub".split())
_NOT_A_MODEL = frozenset("""and or to of in on at by for from with as than per x
m cm mm km t kg g h hr hrs min s kw kwh mw v kv hz bar psi teu kn knots nm ft lb lbs l ml
tonnes tons metres meters hours minutes seconds days weeks months years times percent
points goals runs wins losses votes seats people def beat""".split())
_TOKEN = re.compile(r"[^\W_][\w'’.\-&]*", re.UNICODE)


def family(type_: str) -> str:
    """The type family: ``place`` for country and place, ``organization``
    for team and organization, else the type itself."""
    return _FAMILY.get(type_, type_)


def compatible(a: str, b: str) -> bool:
    """Can entities of types ``a`` and ``b`` be the same thing?"""
    return a == b or a == "thing" or b == "thing" or (
        _FAMILY.get(a, a) == _FAMILY.get(b, b))


@lru_cache(maxsize=131072)
def normalise(name: str) -> str:
    """The matching key of ``name`` (see the module docstring); ``""`` when
    nothing is left."""
    s = unicodedata.normalize("NFKC", name)
    if "[" in s:
        s = _REFS.sub(" ", s)
    if "." in s:
        s = _DOTTED.sub(lambda m: m.group(0).replace(".", ""), s)
    if not s.isascii():
        s = "".join(c for c in unicodedata.normalize("NFKD", s)
                    if not unicodedata.combining(c))
    s = s.casefold().replace("&", " and ")
    if "'" in s or "’" in s:
        s = s.replace("'", "").replace("’", "")
    s = " ".join(_NON_WORD.sub(" ", s).split())
    return s[4:] if s.startswith("the ") else s


def clean_surface(text: str) -> str:
    """``text`` as a display name: NFKC, one line, reference marks, quotes
    and trailing ``,;:`` dropped, whitespace collapsed."""
    s = unicodedata.normalize("NFKC", text)
    if "[" in s:
        s = _REFS.sub(" ", s)
    s = _QUOTES.sub("", _MARKS.sub(" ", s))
    s = " ".join(s.split()).strip(" ,;:-–—'’")
    s = _LEAD_MARK.sub("", s)
    while s.endswith(")") and _SHORT_PAREN.search(s):
        s = _SHORT_PAREN.sub("", s)
    while s.endswith(".."):
        s = s[:-1]
    if s.endswith(".") and len(s.rsplit(" ", 1)[-1]) > 4 and "." not in s[:-1].rsplit(" ", 1)[-1]:
        s = s[:-1]
    return s


@lru_cache(maxsize=131072)
def entity_surface(text: str) -> str | None:
    """The cleaned name in ``text``, or None when it does not read as a name
    (see the module docstring)."""
    if not text or len(text) > 120:
        return None
    s = clean_surface(text)
    if len(s) < 2 or len(s) > 80:
        return None
    letters = digits = 0
    first = None
    for ch in s:
        if ch.isalpha():
            letters += 1
            if first is None:
                first = ch
        elif ch.isdigit():
            digits += 1
    if letters < 2 or digits > letters or first is None or not first.isupper():
        return None
    if s.count(" ") >= 8 or ": " in s:
        return None
    low = s.lower()
    if low in _STOP_VALUES or _DATE.match(s):
        return None
    return s


def proper_name(name: str) -> bool:
    """Is ``name`` a proper name of two or more words (or a model: one name
    and its number, ``Megalift 65``): every word that has a
    letter starts with a capital or a digit, but connectors (``of``,
    ``de``, ``von``...) and parenthesised parts ("Port of Ostrevik", "Skelmar
    Tonnage AS", "Tove Vrancken-Rask"; not "Length overall", "Call sign" or
    "Operator (time charterer)", labels of fields)."""
    tokens = _TOKEN.findall(_PAREN.sub(" ", name))
    if len(tokens) == 3 and tokens[0].lower() == "the":
        tokens = tokens[1:]  # "The Megalift 65": a model, as below
    words = [w for w in tokens if any(c.isalpha() for c in w)]
    if len(words) == 1 and len(tokens) == 2 and tokens[1].isdigit() and len(tokens[1]) <= 4 \
            and words[0] == tokens[0] and words[0][0].isupper() and "(" not in name:
        return _model(words[0], tokens[1])
    if len(words) < 2:
        return False
    return all(w[0].isupper() or w[0].isdigit() or w.lower() in _CONNECT for w in words) and \
        sum(1 for w in words if w.lower() not in _CONNECT) >= 2 and "(" not in name


def acronym(name: str) -> str:
    """Initials of the capitalised words of ``name`` (``"National Football
    League"`` -> ``"nfl"``), lower case; ``""`` for fewer than two words."""
    words = [w for w in _TOKEN.findall(name) if (w[0].isupper() or w[0].isdigit())
             and w.lower() not in _CONNECT]
    return "".join(w[0].lower() for w in words) if len(words) >= 2 else ""


def _sentence_end(tok: str) -> bool:
    if tok.endswith(".."):
        return True
    core = tok.rstrip(".")
    return tok.endswith(".") and len(core) > 1 and core.lower() not in _ABBREV and (
        "." not in core)


def _upper_class() -> str:
    """A regex character class of every upper-case letter of the BMP."""
    parts, start = [], None
    for c in range(0x10001):
        up = c < 0x10000 and chr(c).isupper()
        if up and start is None:
            start = c
        elif not up and start is not None:
            a, b = re.escape(chr(start)), re.escape(chr(c - 1))
            parts.append(a if start == c - 1 else f"{a}-{b}")
            start = None
    return "[" + "".join(parts) + "]"


_CAP_WORD = _upper_class() + r"[\w'’.\-&]*"
_CONNECTORS = "|".join(sorted(_CONNECT))
_CAP_RUN = re.compile(rf"(?<![\w'’.\-&]){_CAP_WORD}(?: (?:(?:{_CONNECTORS}) ){{0,2}}"
                      rf"{_CAP_WORD})*")


def _pieces(run: str) -> list[tuple[int, int]]:
    """Split a run of capitalised words after a sentence end (``Smith. The``)
    or at a word with a lower-case hyphen suffix (``Angeles-based``)."""
    if "." not in run and "-" not in run:
        return [(0, len(run))]
    out, start, pos = [], 0, 0
    words = run.split(" ")
    for k, word in enumerate(words):
        end = pos + len(word)
        cut = _HYPHEN_LOW.search(word)
        nxt = words[k + 1] if k + 1 < len(words) else ""
        if cut:
            out.append((start, pos + cut.start()))
            start = end + 1
        elif nxt and (_sentence_end(word) or word.endswith(".") and nxt.lower() in _LEAD_STOP):
            out.append((start, end))
            start = end + 1
        pos = end + 1
    if start < len(run):
        out.append((start, len(run)))
    return out


def capitalised_spans(text: str, max_words: int = 8) -> list[tuple[str, int, int]]:
    """Proper-name spans of running text: runs of capitalised words, joined
    by up to two connectors (``of the``, ``de``, ``van``...), as ``(surface,
    start, end)`` character offsets. A run is split after a sentence end;
    leading function words (``In``, ``After``...) are dropped; a lone
    sentence-initial word is kept only when it is an acronym."""
    out: list[tuple[str, int, int]] = []
    for m in _CAP_RUN.finditer(text):
        run = m.group(0)
        for a, b in _pieces(run):
            words = run[a:b].split(" ")
            lead = 0
            while lead < len(words) and words[lead].rstrip(".").lower() in _LEAD_STOP:
                a += len(words[lead]) + 1
                lead += 1
            words = words[lead:]
            while words and words[-1].lower() in _CONNECT:
                b -= len(words[-1]) + 1
                words.pop()
            if not words or len(words) > max_words or not words[0][:1].isupper():
                continue
            surface = run[a:b]
            if surface.endswith(".") and _sentence_end(words[-1]):
                surface = surface[:-1]
            surface = _POSSESSIVE.sub("", surface)
            s = m.start() + a
            if len(words) == 1:
                before = text[:s].rstrip()
                core = surface.replace(".", "")
                if (not before or before[-1] in ".!?:;\"“") and not (
                        core.isupper() and len(core) >= 2):
                    continue
                if surface.lower() in _STOP_VALUES or _DATE.match(surface):
                    continue
            if len(surface) >= 2:
                out.append((surface, s, s + len(surface)))
    return out


def model_names(text: str, spans: list[tuple[str, int, int]]) -> list[str]:
    """The models ``text`` names: a span of :func:`capitalised_spans` and
    the number written after it, when a lower-case word or a bracket follows
    the number (``The Orrin Verta 220 pumps``, ``the Megalift 65 (model code
    VSC-65)``: two sibling models, where the span alone names one
    "Megalift"); not after a label word (``Round 3``), a month (``June
    14``) or a currency, nor for a year, a unit (``366 m``) or a score
    (``Heidelberg 30 def.``)."""
    out = []
    for surface, _, end in spans:
        m = _MODEL_NUMBER.match(text, end)
        if m is None or surface.endswith((".", ",")):
            continue
        if _model(surface.rsplit(" ", 1)[-1], m.group(1)) and \
                m.group("next").lower() not in _NOT_A_MODEL:
            out.append(f"{surface} {m.group(1)}")
    return out


def _model(word: str, number: str) -> bool:
    """Can ``word`` followed by ``number`` (1-4 digits) name a model: not a
    label word (``Round 3``), a month (``June 14``) or a currency (``EUR
    36``), and the number not a year?"""
    word = word.lower().rstrip(".")
    return not (word in _LABEL_WORDS or word in _CURRENCIES or _DATE.match(word)
                or (len(number) == 4 and number[0] in "12"))


def alias_pairs(text: str, spans: list[tuple[str, int, int]] | None = None
                ) -> list[tuple[str, str]]:
    """``(name, alias)`` pairs that ``text`` declares: an acronym or an
    "also known as" name in parentheses after a name, or "also known as" /
    "a.k.a." / "better known as" / "nicknamed" followed by a name. ``spans``
    are the text's :func:`capitalised_spans` (computed when omitted)."""
    if "(" not in text and not _ALIAS_CUES.search(text):
        return []
    spans = capitalised_spans(text) if spans is None else spans
    out: list[tuple[str, str]] = []

    def before(pos: int) -> str | None:
        best = None
        for surface, s, e in spans:
            if e <= pos and text[e:pos].strip(" ,") == "":
                best = surface
        return best

    for m in _PAREN.finditer(text):
        name = before(m.start())
        if not name:
            continue
        inner = m.group(1).strip()
        cue = _ALIAS_CUES.match(inner)
        inner = inner[cue.end():] if cue else inner
        inner = inner.split(";")[0].split(",")[0].strip()
        surface = entity_surface(inner)
        if surface is None or any(ch.isdigit() for ch in surface):
            continue
        letters = surface.replace(".", "").replace(" ", "")
        if (letters.isupper() and acronym(name) == letters.lower()) or cue:
            out.append((name, surface))
    for m in _ALIAS_CUES.finditer(text):
        name = before(m.start())
        after = [(s, b) for s, b, _ in spans if b == m.end()
                 or (b > m.end() and text[m.end():b].strip(" \"“'") == "")]
        if name and after:
            out.append((name, after[0][0]))
    return out


def _demonym(w: str, x: str) -> bool:
    """``America``/``American``, ``Germany``/``Germans``: a name and its
    demonym or plural-of-demonym, not the same entity."""
    short, long_ = sorted((w, x), key=len)
    return long_ == short + "n" or (len(w) == len(x) and w[:-1] == x[:-1]
                                    and {w[-1], x[-1]} == {"y", "s"})


def _twins(ra: set[str], rb: set[str]) -> bool:
    """Can the words only one name has be paired one to one with words only
    the other has, each pair one edit apart, not in the first letter, at
    least 6 and 7 letters long, and not a name and its demonym?"""
    if len(ra) != len(rb):
        return False
    left = sorted(rb)
    for w in sorted(ra):
        twin = next((x for x in left if min(len(w), len(x)) >= 6 and max(len(w), len(x)) >= 7
                     and w[0] == x[0] and not _demonym(w, x)
                     and Levenshtein.distance(w, x, score_cutoff=1) <= 1), None)
        if twin is None:
            return False
        left.remove(twin)
    return True


def similarity(a: str, b: str, extra_words: bool = True) -> float:
    """Similarity in [0, 1] of two :func:`normalise` d names of which at
    least one has two words (one-word names are similar only when equal):
    rapidfuzz ``ratio / 100``, but 0 when their numbers differ, when they
    hold the same words in another order (``Jack Black``), or when a word
    only one name has is not one edit away from a word only the other has
    (``Manchester United`` / ``Manchester City``, ``Cattle Creek`` / ``Castle
    Creek``; ``Jonatan`` / ``Jonathan`` passes, see :func:`_twins`). With
    ``extra_words``, 0.9 when one adds only generic words (``FC``, ``Club``)
    or middle initials (``James H. Harrison`` / ``James Harrison``; not to a
    name that has initials already) to the other, else 0 for such pairs."""
    if a == b:
        return 1.0
    if " " not in a and " " not in b:
        return 0.0
    if _DIGITS.findall(a) != _DIGITS.findall(b):
        return 0.0
    sa, sb = set(a.split()), set(b.split())
    ra, rb = sa - sb, sb - sa
    if ra and rb:
        if not _twins(ra, rb):
            return 0.0
    elif ra or rb:
        extra = ra or rb
        longer, shorter = (a.split(), b.split()) if ra else (b.split(), a.split())
        middle = set(longer[1:-1]) if all(len(w) > 1 for w in shorter) else set()
        if extra_words and len(extra) < len(sa | sb) and all(
                w in GENERIC_WORDS or (len(w) == 1 and w in middle) for w in extra):
            return 0.9
        return 0.0
    else:
        return 0.0
    return fuzz.ratio(a, b) / 100.0


def entity_id(type_: str, name: str) -> str:
    """The global id of an entity: ``f"{type}:{normalise(name)}"``."""
    key = normalise(name) or name.strip().lower()
    if len(key) > 100:
        key = key[:80] + "~" + hashlib.sha1(key.encode()).hexdigest()[:10]
    return f"{type_}:{key}"
