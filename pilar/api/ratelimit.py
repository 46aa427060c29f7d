"""Per-caller rate limits on the costly routes (search, answer, uploads,
evaluation, page images, Cypher) and their MCP tools, with the ``limits``
library: ``PILAR_API_RATE_LIMIT`` (e.g. ``120/minute``, several joined by
``;``; empty = off) counted per caller and per operation in a moving window,
in the memory of each server process. A caller is its API key (a digest of
it) when keys are configured, else its client address."""

from __future__ import annotations

import hashlib
import math
import time

from limits import parse_many
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter


class RateLimiter:
    """The limits of ``spec`` (``limits`` notation: ``120/minute``,
    ``10/second;500/hour``; empty = no limit). Raises ``ValueError`` for a
    spec ``limits`` cannot read."""

    def __init__(self, spec: str):
        self.spec = spec.strip()
        self.items = parse_many(self.spec) if self.spec else []
        self.limiter = MovingWindowRateLimiter(MemoryStorage())

    def retry_after(self, operation: str, caller: str) -> int | None:
        """None when ``caller`` may run ``operation`` now (the call is
        counted), else the whole seconds until it may."""
        if all(self.limiter.test(item, operation, caller) for item in self.items):
            for item in self.items:
                self.limiter.hit(item, operation, caller)
            return None
        resets = [self.limiter.get_window_stats(item, operation, caller).reset_time
                  for item in self.items if not self.limiter.test(item, operation, caller)]
        return max(1, math.ceil(max(resets) - time.time()))

    def refusal(self, operation: str, caller: str) -> tuple[str, int] | None:
        """``(message, retry after seconds)`` when ``caller`` is over a limit
        for ``operation``, else None (the call is counted)."""
        wait = self.retry_after(operation, caller)
        if wait is None:
            return None
        return (f"rate limit of {self.spec} for {operation} reached "
                f"(PILAR_API_RATE_LIMIT); retry in {wait} s", wait)


def caller_id(presented_key: str | None, client_host: str | None) -> str:
    """Whom a request counts against: its key's digest, else its address."""
    if presented_key:
        return "key:" + hashlib.sha256(presented_key.encode()).hexdigest()[:32]
    return f"address:{client_host or 'unknown'}"
