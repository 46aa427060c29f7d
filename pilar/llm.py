"""One OpenAI-compatible transport for every model call pilar makes: text
and visual assertion extraction (PILAR §3.2, App. E.3) and the reader
(App. H.2).

It wraps the ``openai`` client: base URL, API key, model, a timeout per
request (seconds) and the client's own retries (exponential backoff with
jitter on connection errors, timeouts, 408/409/429 and 5xx; pilar adds no
retry loop). Structured output asks for JSON following a schema, in the
form the server understands (``Settings.llm_response_format``): OpenAI's
``{"type": "json_schema", ...}`` (vLLM, OpenAI) or ``{"type":
"json_object", "schema": ...}`` (llama-cpp-python's server).

Every failure becomes one :class:`~pilar.errors.LLMError` kind with a
one-line message: :class:`~pilar.errors.LLMTimeoutError`,
:class:`~pilar.errors.LLMUnavailableError` (connection, 5xx),
:class:`~pilar.errors.LLMRequestError` (4xx) and
:class:`~pilar.errors.LLMReplyError` (no usable reply). Callers decide what
a failure means: extraction turns it into a warning, the reader into a
clean CLI line or a problem+json 502/504.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import openai
from openai.types.chat import ChatCompletion

from pilar.config import Settings
from pilar.errors import (LLMError, LLMReplyError, LLMRequestError, LLMTimeoutError,
                          LLMUnavailableError, ReaderNotConfiguredError)

__all__ = ["Endpoint", "LLMClient", "Completion", "is_transport_failure"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how to call a model: ``base_url`` ends in ``/v1``;
    ``model`` None means "the server's only model" (asked at /v1/models);
    ``timeout`` in seconds per request; ``max_retries`` of the client."""

    base_url: str
    model: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    max_retries: int = 2
    response_format: Literal["json_schema", "json_object"] = "json_schema"

    @classmethod
    def extraction(cls, settings: Settings) -> "Endpoint":
        """The text-extraction endpoint (``PILAR_LLM_*``)."""
        return cls._from(settings, settings.llm_base_url or "", settings.llm_model,
                         settings.llm_api_key, settings.llm_timeout)

    @classmethod
    def vlm(cls, settings: Settings) -> "Endpoint":
        """The visual-extraction endpoint: ``PILAR_VLM_BASE_URL`` (default the
        LLM's) with ``PILAR_VLM_MODEL``."""
        return cls._from(settings, settings.vlm_base_url or settings.llm_base_url or "",
                         settings.vlm_model, settings.llm_api_key, settings.llm_timeout)

    @classmethod
    def reader(cls, settings: Settings) -> "Endpoint":
        """The reader's endpoint: ``PILAR_READER_*`` over ``PILAR_LLM_*``.

        Raises :class:`~pilar.errors.ReaderNotConfiguredError` when neither
        base URL is set."""
        base = settings.reader_base_url or settings.llm_base_url
        if not base:
            raise ReaderNotConfiguredError(
                "no reader is configured: set PILAR_LLM_BASE_URL (or PILAR_READER_BASE_URL) "
                "to an OpenAI-compatible server")
        # the shared server's model only when the reader uses the shared server
        model = settings.reader_model or (None if settings.reader_base_url else settings.llm_model)
        return cls._from(settings, base, model, settings.reader_api_key or settings.llm_api_key,
                         settings.reader_timeout or settings.llm_timeout)

    @classmethod
    def _from(cls, settings: Settings, base: str, model: str | None, key: str | None,
              timeout: float) -> "Endpoint":
        return cls(base_url=base, model=model or None, api_key=key, timeout=timeout,
                   max_retries=settings.llm_max_retries,
                   response_format=settings.llm_response_format)


@dataclass(frozen=True, slots=True)
class Completion:
    """One chat reply: ``text`` (may be empty), the server's ``finish_reason``
    (``stop``, ``length``...), token ``usage`` when reported, and ``model``."""

    text: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model: str = ""


class LLMClient:
    """Chat completions on one :class:`Endpoint` (thread-safe: the openai
    client is). Every method raises only :class:`~pilar.errors.LLMError` kinds."""

    def __init__(self, endpoint: Endpoint):
        self.endpoint = endpoint
        self.client = openai.OpenAI(base_url=endpoint.base_url,
                                    api_key=endpoint.api_key or "EMPTY",
                                    timeout=endpoint.timeout, max_retries=endpoint.max_retries)
        self._model = endpoint.model

    @property
    def model(self) -> str:
        """The model name sent with each request: the endpoint's, or the
        only model the server lists at ``/v1/models`` (asked once).

        Raises :class:`~pilar.errors.LLMRequestError` when the server lists
        none or several (then a model must be configured)."""
        if self._model is None:
            ids = [m.id for m in self._guard(lambda: list(self.client.models.list()))]
            if len(ids) != 1:
                listed = ", ".join(ids[:5]) or "none"
                raise LLMRequestError(f"{self.endpoint.base_url} serves {len(ids)} models "
                                      f"({listed}): set PILAR_READER_MODEL or PILAR_LLM_MODEL")
            self._model = ids[0]
        return self._model

    def chat(self, messages: list[dict], *, max_tokens: int | None = None,
             temperature: float = 0.0, schema: dict | None = None,
             schema_name: str = "reply") -> Completion:
        """One completion of ``messages`` (OpenAI chat format; content may
        hold ``image_url`` parts). With ``schema`` (a JSON schema) the reply
        is constrained to JSON following it (see the module docstring); the
        caller validates it. Raises an :class:`~pilar.errors.LLMError` kind;
        a reply that is not a chat completion (not JSON) or has no choices is
        :class:`~pilar.errors.LLMReplyError`."""
        extra = {"response_format": self._format(schema, schema_name)} if schema else {}
        if max_tokens is not None:
            extra["max_tokens"] = max_tokens
        resp = self._guard(lambda: self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=temperature, **extra))
        if not isinstance(resp, ChatCompletion):  # a body that is not JSON comes back as text
            shown = " ".join(str(resp).split())[:80]
            raise LLMReplyError(f"bad reply: not a chat completion ({shown})")
        if not resp.choices:
            raise LLMReplyError("the reply has no choices")
        choice = resp.choices[0]
        refusal = getattr(choice.message, "refusal", None)
        if refusal:
            raise LLMRequestError(f"refused: {' '.join(refusal.split())[:120]}")
        usage = resp.usage
        return Completion(text=choice.message.content or "", finish_reason=choice.finish_reason,
                          prompt_tokens=usage.prompt_tokens if usage else None,
                          completion_tokens=usage.completion_tokens if usage else None,
                          model=resp.model or self.model)

    def stream(self, messages: list[dict], *, max_tokens: int | None = None,
               temperature: float = 0.0) -> Iterator[str]:
        """The reply to ``messages`` as text deltas, as the server sends them
        (server-sent events). Raises an :class:`~pilar.errors.LLMError` kind,
        also midway through the stream."""
        extra = {"max_tokens": max_tokens} if max_tokens is not None else {}
        chunks = self._guard(lambda: self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=temperature, stream=True, **extra))
        it = iter(chunks)
        while True:
            chunk = self._guard(lambda: next(it, None))
            if chunk is None:
                return
            for choice in chunk.choices or ():
                delta = choice.delta
                if delta and getattr(delta, "refusal", None):
                    raise LLMRequestError(f"refused: {' '.join(delta.refusal.split())[:120]}")
                if delta and delta.content:
                    yield delta.content

    def _format(self, schema: dict, name: str) -> dict:
        if self.endpoint.response_format == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}

    def _guard(self, call):
        """``call()`` with the openai client's exceptions turned into
        :class:`~pilar.errors.LLMError` kinds (one line each)."""
        where = self.endpoint.base_url
        try:
            return call()
        except openai.APITimeoutError:
            raise LLMTimeoutError(f"timed out after {self.endpoint.timeout:g} s ({where})") \
                from None
        except openai.APIConnectionError as exc:
            raise LLMUnavailableError(f"connection failed ({_cause(exc)}; {where})") from None
        except openai.APIStatusError as exc:
            code, text = exc.status_code, _first_line(exc)
            if code >= 500:
                raise LLMUnavailableError(f"HTTP error {code}: {text}", status_code=code) from None
            what = "refused" if "refus" in text.lower() else "HTTP error"
            raise LLMRequestError(f"{what} {code}: {text}", status_code=code) from None
        except openai.APIError as exc:  # an error event inside a stream, a bad body
            raise LLMReplyError(f"bad reply: {_first_line(exc)}") from None
        except json.JSONDecodeError as exc:  # a stream event that is not JSON
            raise LLMReplyError(f"bad reply: {_first_line(exc)}") from None


def _cause(exc: BaseException) -> str:
    inner = exc.__cause__ or exc.__context__
    return type(inner).__name__ if inner else type(exc).__name__


def _first_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:160]


def is_transport_failure(err: LLMError) -> bool:
    """True for failures of the server or the network (timeouts, connection
    errors, 5xx), False for refusals and unusable replies."""
    return isinstance(err, (LLMTimeoutError, LLMUnavailableError))
