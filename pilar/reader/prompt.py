"""Packet -> reader prompt (PILAR App. H.3, Fig. 3: the generic template).

The model is told to answer from the ``[Context]`` alone, short answer
first, citing packet items by number, and to say ``not in the evidence``
when the context does not hold the answer. Items are numbered from 1 in
packet order; the marker ``[n]`` goes before each item's evidence line
(after its header lines, :attr:`pilar.model.PacketItem.body_start`). The
numbered context is counted again with the reader's tokenizer and trailing
items are dropped until it fits the budget (markers cost tokens too).
"""

from __future__ import annotations

import base64

from pilar.model import Packet, PacketImage, PacketItem
from pilar.packing.tokens import TokenCounter

NOT_IN_EVIDENCE = "not in the evidence"
"""What the reader answers when the packet does not hold the answer."""

SYSTEM = (
    "You answer questions about documents using only the evidence in [Context]; never use "
    "outside knowledge. Each context line starts with its number in square brackets. "
    "Reply with the short answer first, on one line, followed by the numbers of the lines "
    "that support it in square brackets, e.g. \"1998 [3]\". Add at most one sentence of "
    f"explanation after it. If [Context] does not contain the answer, reply exactly: "
    f"{NOT_IN_EVIDENCE}.")


def marked(n: int, item: PacketItem) -> str:
    """``item``'s text with ``[n] `` before its evidence line."""
    at = min(max(item.body_start, 0), len(item.text))
    return f"{item.text[:at]}[{n}] {item.text[at:]}"


def numbered(packet: Packet, counter: TokenCounter, budget: int | None = None) -> Packet:
    """The packet as the reader sees it: items numbered from 1, ``text`` the
    numbered context, at most ``budget`` (default ``packet.budget``) tokens
    by ``counter`` (trailing items dropped until it fits)."""
    budget = packet.budget if budget is None else budget
    items = list(packet.items)
    while True:
        text = "\n".join(marked(i, item) for i, item in enumerate(items, 1))
        tokens = counter.count(text)
        if tokens <= budget or not items:
            break
        items.pop()
    return Packet(text=text, items=items, budget=budget, tokens=tokens, tokenizer=counter.name,
                  estimate=counter.estimate)


def messages(question: str, context: Packet, images: list[PacketImage] = ()) -> list[dict]:
    """OpenAI chat messages for ``question`` over the numbered ``context``.
    With ``images`` the user message is a list of parts: each crop as a PNG
    data URL after a line naming the item it shows, then the text."""
    user = f"[Context]\n{context.text or '(empty)'}\n\n[Question]\n{question.strip()}\n\n[Answer]"
    if not images:
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    parts: list[dict] = []
    for img in images:
        parts.append({"type": "text", "text": f"Image of [{img.item + 1}]:"})
        parts.append({"type": "image_url", "image_url": {
            "url": "data:image/png;base64," + base64.b64encode(img.png).decode()}})
    parts.append({"type": "text", "text": user})
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": parts}]
