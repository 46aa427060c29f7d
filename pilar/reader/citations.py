"""Reading the reader's reply: the short answer, its ``[n]`` citations
resolved to the packet's supports, and flags (PILAR App. H.2-H.3).

A citation is ``[n]`` or a list ``[n, m]`` / ``[n-m]`` of packet item
numbers (1-based). Valid numbers resolve to the item's
:class:`~pilar.model.Citation` (document, page, section path, support id,
bbox or table cell); numbers the packet lacks are kept in
``Answer.unknown`` and flagged ``unknown_citation``; an answer that cites no
packet item is flagged ``no_citation`` unless it says the packet does not
hold the answer (``not_in_evidence``). Nothing is dropped silently.
"""

from __future__ import annotations

import re

from pilar.model import Answer, AnswerCitation, AnswerFlag, Packet, PacketImage
from pilar.reader.prompt import NOT_IN_EVIDENCE

_CITE = re.compile(r"\[\s*(\d+(?:\s*(?:[,;]|-|–)\s*\d+)*)\s*\]")
_NOT_IN = re.compile(r"\bnot\s+in\s+the\s+(?:evidence|context)\b", re.I)
MAX_RANGE = 50
"""A cited range ``[a-b]`` longer than this is read as its two ends."""


def cited_numbers(text: str) -> list[int]:
    """The item numbers cited in ``text``, in order of first mention."""
    out: list[int] = []
    for m in _CITE.finditer(text):
        for part in re.split(r"\s*[,;]\s*", m.group(1)):
            ends = [int(x) for x in re.split(r"\s*[-–]\s*", part) if x]
            if len(ends) == 2 and 0 <= ends[1] - ends[0] <= MAX_RANGE:
                ends = list(range(ends[0], ends[1] + 1))
            out.extend(ends)
    return list(dict.fromkeys(out))


def short_answer(text: str) -> str:
    """The reply's first non-empty line without citation markers, spaces
    collapsed and trailing punctuation dropped."""
    for line in text.splitlines():
        line = " ".join(_CITE.sub(" ", line).split()).strip(" .;:,")
        if line:
            return line
    return ""


def read_answer(question: str, text: str, packet: Packet, *, model: str = "",
                finish_reason: str | None = None, images: list[PacketImage] = (),
                prompt_tokens: int | None = None,
                completion_tokens: int | None = None) -> Answer:
    """The :class:`~pilar.model.Answer` for the reply ``text`` to
    ``question`` over ``packet`` (numbered as the reader saw it)."""
    numbers = cited_numbers(text)
    n_items = len(packet.items)
    valid = [n for n in numbers if 1 <= n <= n_items]
    unknown = [n for n in numbers if not 1 <= n <= n_items]
    citations = [AnswerCitation(n=n, citation=packet.items[n - 1].citation,
                                text=packet.items[n - 1].text) for n in valid]
    short = short_answer(text)
    flags: list[AnswerFlag] = []
    if _NOT_IN.search(text) and (not valid or short.lower().startswith(NOT_IN_EVIDENCE)):
        flags.append("not_in_evidence")
        short = NOT_IN_EVIDENCE
    elif not valid:
        flags.append("no_citation")
    if unknown:
        flags.append("unknown_citation")
    if finish_reason == "length":
        flags.append("truncated")
    return Answer(question=question, text=text, short=short, citations=citations,
                  packet=packet, model=model, unknown=unknown, flags=flags, images=list(images),
                  prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
