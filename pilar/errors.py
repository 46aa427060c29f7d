"""Exceptions raised by pilar, in one module (as neo4j-graphrag does)."""


class PilarError(Exception):
    """Base class of every error pilar raises on purpose."""


class IngestError(PilarError):
    """A file could not be ingested. ``str(err)`` is the reason, one line;
    ``path`` names the file when known."""

    def __init__(self, reason: str, path: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.path = path


class UnsupportedTypeError(IngestError):
    """The file's content is not a type pilar ingests (sniffed, not by name)."""


class IngestCancelled(PilarError):
    """An ingest run was cancelled (its ``cancel`` event set): documents
    stored before stay whole, the ones in progress were not written."""


class StoreError(PilarError):
    """A store could not be opened, migrated or written."""


class ConfigError(PilarError):
    """A setting is missing or invalid."""


class LLMError(PilarError):
    """A call to the OpenAI-compatible model server (:mod:`pilar.llm`) failed.
    ``str(err)`` is one line naming the server and the reason. The REST layer
    maps the kinds below to problem+json: :class:`LLMTimeoutError` -> 504,
    any other :class:`LLMError` -> 502 (a bad gateway: the model server).
    ``status_code`` is the model server's HTTP status when it sent one."""

    status = 502

    def __init__(self, reason: str, status_code: int | None = None):
        super().__init__(reason)
        self.status_code = status_code


class LLMTimeoutError(LLMError):
    """The model server did not answer within ``PILAR_LLM_TIMEOUT`` seconds
    (after the client's retries)."""

    status = 504


class LLMUnavailableError(LLMError):
    """The model server could not be reached, or answered 5xx after the
    client's retries."""


class LLMRequestError(LLMError):
    """The model server refused the request (HTTP 4xx: unknown model, bad key,
    context too long, refused content)."""


class LLMReplyError(LLMError):
    """The model server's reply could not be used: no choices, empty,
    malformed JSON, or not valid against the requested schema."""


class ReaderNotConfiguredError(ConfigError):
    """No reader model server is configured (``PILAR_LLM_BASE_URL`` or
    ``PILAR_READER_BASE_URL``); the REST layer answers 503."""

    status = 503
class QuestionsError(PilarError):
    """A questions file for evaluation cannot be read; ``str(err)`` names the
    file and the reason, one line."""


class EmptyStoreError(StoreError):
    """There is nothing to read: no store at the configured home, a store
    without documents, or none in the collections / ids a search is limited
    to. ``str(err)`` says which and how to add or list documents."""

    status = 404


class UnknownScopeError(EmptyStoreError):
    """A request named collections or document ids that hold no document
    the caller may see (whether they exist for another caller or not at
    all: the message is the same, :func:`pilar.query.unknown_scope`)."""
