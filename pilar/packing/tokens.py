"""Token counting for packet budgets.

Budgets are counted with the reader's tokenizer when ``PILAR_READER_TOKENIZER``
(default ``PILAR_READER_MODEL``, then ``PILAR_LLM_MODEL``) names a local
tokenizer (transformers AutoTokenizer: a folder, a cached hub name, or a
llama.cpp ``.gguf`` file); offline without one, the embedder's tokenizer
stands in and counts are marked as an estimate.
"""

from __future__ import annotations

import bisect
import os
import re
import threading
from pathlib import Path

MEMO_SIZE = 200_000
"""Texts whose token counts :class:`TokenCounter` remembers."""
LONG_WORD = 100
"""Characters after which an unbroken run is split for counting (:func:`breakable`)."""
_LONG_RUN = re.compile(r"\S{%d,}" % (LONG_WORD + 1))


class TokenCounter:
    """Counts tokens of text with a Hugging Face tokenizer.

    ``name`` says which tokenizer; ``estimate`` is True when it is not the
    reader's own. Thread-safe: calls run one at a time under ``lock`` (pass
    the lock of whoever else uses the same tokenizer, e.g. the embedder).
    """

    def __init__(self, tokenizer, name: str, estimate: bool, lock=None):
        self.tokenizer = tokenizer
        self.name = name
        self.estimate = estimate
        self.lock = lock or threading.RLock()
        self._memo: dict[str, int] = {}
        self.splits_at_newlines = _splits_at_whitespace(tokenizer)
        """True when the tokenizer counts lines apart: it drops whitespace before
        anything else looks across it (a whitespace pre-tokenizer after a
        character-wise normaliser, as BERT's WordPiece), so text joined with
        newlines costs the sum of its lines (:meth:`count_joined`)."""

    @classmethod
    def of(cls, settings, embedder) -> "TokenCounter":
        """The reader's token counter of ``settings`` (:meth:`for_reader` of
        ``PILAR_READER_TOKENIZER``, else the reader's model, else the
        extractor's), falling back to ``embedder``'s tokenizer."""
        s = settings
        return cls.for_reader(s.reader_tokenizer or s.reader_model or s.llm_model,
                              embedder.tokenizer, s.embedding_model, embedder.tokenizer_lock)

    @classmethod
    def for_reader(cls, reader_model: str | None, fallback_tokenizer, fallback_name: str,
                   fallback_lock=None):
        """The reader's tokenizer if ``reader_model`` (a Hugging Face name or
        folder, or a ``.gguf`` file, read with the ``gguf`` package) loads
        offline, else the fallback (the embedder's tokenizer, used under
        ``fallback_lock``), marked as an estimate."""
        if reader_model:
            try:
                from transformers import AutoTokenizer

                path = Path(reader_model)
                if path.is_dir() or path.is_file():
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                if path.suffix == ".gguf" and path.is_file():  # llama.cpp model file
                    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
                else:
                    tok = AutoTokenizer.from_pretrained(reader_model)
                return cls(tok, reader_model, estimate=False)
            except Exception:  # noqa: BLE001 - unreachable hub or bad name: fall back
                pass
        return cls(fallback_tokenizer, fallback_name, estimate=True, lock=fallback_lock)

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (no special tokens); see :func:`breakable`."""
        return self._lengths([text])[0] if text else 0

    def count_joined(self, text: str) -> int:
        """:meth:`count` of ``text``, summed over its lines through the memo of
        :meth:`count_many` when :attr:`splits_at_newlines` (a packet is joined from
        lines already counted while it was packed), else counted whole."""
        if not self.splits_at_newlines:
            return self.count(text)
        return sum(self.count_many(text.split("\n"))) if text else 0

    def count_one(self, text: str) -> int:
        """:meth:`count` through the memo of :meth:`count_many` (for short
        texts seen often: lines, headers)."""
        return self.count_many([text])[0]

    def count_many(self, texts: list[str]) -> list[int]:
        """Token counts of ``texts``, in order. Counts are memoised (up to
        :data:`MEMO_SIZE` texts), since the same units and lines are packed
        again and again; the memo is dropped whole when it is full."""
        with self.lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
            if missing:
                if len(self._memo) + len(missing) > MEMO_SIZE:
                    self._memo.clear()
                self._memo.update(zip(missing, self._lengths(missing)))
            return [self._memo[t] for t in texts]

    def _lengths(self, texts: list[str]) -> list[int]:
        with self.lock:
            enc = self.tokenizer([breakable(t)[0] for t in texts], add_special_tokens=False,
                                 truncation=False, verbose=False)
        return [len(ids) for ids in enc["input_ids"]]

    def truncate(self, text: str, limit: int) -> str:
        """The longest prefix of ``text`` (at a token boundary) of at most ``limit`` tokens."""
        if limit <= 0:
            return ""
        spaced, inserted = breakable(text)
        with self.lock:
            enc = self.tokenizer(spaced, add_special_tokens=False, truncation=False,
                                 verbose=False, return_offsets_mapping=True)
        offsets = enc["offset_mapping"]
        if len(offsets) <= limit:
            return text
        end = offsets[limit - 1][1]
        return text[: end - bisect.bisect_left(inserted, end)]


_CHARWISE_NORMALIZERS = {"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD",
                         "StripAccents"}
_WHITESPACE_SPLITS = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"}


def _splits_at_whitespace(tokenizer) -> bool:
    """Whether ``tokenizer`` (a ``tokenizers.Tokenizer``, or a Hugging Face
    fast tokenizer holding one as ``backend_tokenizer``) splits text
    at whitespace before its model sees it, after only character-wise
    normalisers: then the tokens of lines joined with a newline are the
    tokens of each line. False when that cannot be read (counted whole)."""
    import json

    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    try:
        spec = json.loads(backend.to_str())
    except Exception:  # noqa: BLE001 - a slow or unknown tokenizer: count whole texts
        return False

    def kinds(part) -> list[str]:
        if part is None:
            return []
        inner = part.get("normalizers") or part.get("pretokenizers")
        return [k for p in inner for k in kinds(p)] if inner else [part.get("type")]

    pre = kinds(spec.get("pre_tokenizer"))
    return (bool(pre) and pre[0] in _WHITESPACE_SPLITS
            and set(kinds(spec.get("normalizer"))) <= _CHARWISE_NORMALIZERS)


def breakable(text: str) -> tuple[str, list[int]]:
    """``text`` with a space after every :data:`LONG_WORD` characters of a
    longer unbroken run, and the positions of the inserted spaces.

    WordPiece tokenizers (such as the embedder's, the offline stand-in for
    the reader's) turn any word over 100 characters into one unknown token,
    so a 5,000-character run would cost 1 token; a reader's tokenizer spends
    hundreds on it. Counting the broken-up text keeps budgets honest."""
    if not _LONG_RUN.search(text):
        return text, []
    parts: list[str] = []
    inserted: list[int] = []
    size = 0
    last = 0
    for m in _LONG_RUN.finditer(text):
        parts.append(text[last:m.start()])
        size += m.start() - last
        run = m.group()
        for i in range(0, len(run), LONG_WORD):
            if i:
                inserted.append(size)
                parts.append(" ")
                size += 1
            piece = run[i:i + LONG_WORD]
            parts.append(piece)
            size += len(piece)
        last = m.end()
    parts.append(text[last:])
    return "".join(parts), inserted
