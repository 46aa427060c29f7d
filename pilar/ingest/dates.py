"""Calendar dates in text, as ISO strings: the value a dated record shares
with the rows of another document (PILAR §3.4's bridges).

"The work order that repaired the crane *on the day of the incident*" joins
an incident report's ``Date | 13 June 2024`` to the maintenance log's row
``2024-06-13 | WO-55812 | ...``: the crane is the bridge that reaches the
log, the date picks its row. :func:`dates_in` finds the dates a text
writes in the common unambiguous forms (``2024-06-13``, ``13 June 2024``,
``13 Jun 2024``, ``June 13, 2024``); a numeric day/month form
(``13/06/2024``) is left out, since it reads differently by locale.
"""

from __future__ import annotations

import re
from datetime import date
from functools import lru_cache

__all__ = ["dates_in"]

_MONTHS = {name: i for i, names in enumerate(
    [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
     ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
     ("october", "oct"), ("november", "nov"), ("december", "dec")], start=1)
    for name in names}
_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_FORMS = [
    re.compile(r"(?<![\d-])(?P<year>\d{4})-(?P<mon>\d{2})-(?P<day>\d{2})(?![\d-])"),
    re.compile(r"(?<!\d)(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH + r",?\s+(?P<year>\d{4})(?!\d)",
               re.IGNORECASE),
    re.compile(_MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})(?!\d)",
               re.IGNORECASE),
]


@lru_cache(maxsize=100_000)
def dates_in(text: str) -> frozenset[str]:
    """The calendar dates ``text`` writes, as ISO ``YYYY-MM-DD`` strings
    (``"on 13 June 2024; 2024-06-14"`` -> ``{"2024-06-13", "2024-06-14"}``);
    a match that is no real date (``2024-02-30``) is left out. Cached: a
    multi-hop search asks it of the same units again and again."""
    if not any(c.isdigit() for c in text):
        return frozenset()
    found = set()
    for form in _FORMS:
        for m in form.finditer(text):
            parts = m.groupdict()
            month = int(parts["mon"]) if parts.get("mon") else _MONTHS[parts["month"].lower()]
            try:
                found.add(date(int(parts["year"]), month, int(parts["day"])).isoformat())
            except ValueError:
                continue
    return frozenset(found)
