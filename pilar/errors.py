"""Exceptions raised by pilar, in one module (as neo4j-graphrag does), each
with the HTTP status a served request answers it with (``status``; REST
problem+json and MCP JSON-RPC errors: :func:`pilar.api.problems.described`).
The CLI exits 2 for :class:`ConfigError` (a bad setting) and 1 for the rest.

::

    PilarError                      422  refused on purpose
    ├── IngestError                 422  a file could not be ingested
    │   └── UnsupportedTypeError    422  not a type pilar ingests
    ├── IngestCancelled             409  an ingest run was cancelled
    ├── QuestionsError              422  a questions file cannot be read
    ├── CypherError                 422 / 503  a query refused / the server failed
    ├── StoreError                  503  a store cannot be opened or written
    │   └── EmptyStoreError         404  nothing to read
    │       └── UnknownScopeError   404  named collections or ids hold nothing
    ├── ConfigError                 500  a setting is missing or invalid
    │   ├── NotSupportedError       501  not on the configured backends
    │   └── ReaderNotConfiguredError 503 no reader model server
    └── LLMError                    502  the model server failed
        ├── LLMTimeoutError         504
        ├── LLMUnavailableError     502
        ├── LLMRequestError         502
        └── LLMReplyError           502
"""

TIMED_OUT = ("Neo.ClientError.Transaction.TransactionTimedOut",
             "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration")
"""Neo4j's status codes of a transaction ended at its timeout."""


class PilarError(Exception):
    """Base class of every error pilar raises on purpose."""

    status = 422


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

    status = 409


class QuestionsError(PilarError):
    """A questions file for evaluation cannot be read; ``str(err)`` names the
    file and the reason, one line."""


class CypherError(PilarError):
    """A Cypher query was refused or failed; ``code`` is Neo4j's status code
    (``Neo.ClientError...`` for a client error such as a write in read mode,
    a syntax error or the timeout), None when pilar refused it itself or the
    driver failed. ``status``: 422 when the query is at fault, else 503."""

    def __init__(self, message: str, code: str | None = None, refused: bool = False):
        super().__init__(message)
        self.code = code
        self.refused = refused

    @property
    def is_client_error(self) -> bool:
        """The query is at fault (refused, invalid, too slow), not the server."""
        return self.refused or bool(self.code and self.code.startswith("Neo.ClientError"))

    @property
    def timed_out(self) -> bool:
        """The server ended the transaction at the query's timeout."""
        return self.code in TIMED_OUT

    @property
    def status(self) -> int:  # type: ignore[override]
        return 422 if self.is_client_error else 503


class StoreError(PilarError):
    """A store could not be opened, migrated or written."""

    status = 503


class EmptyStoreError(StoreError):
    """There is nothing to read: no store at the configured home, a store
    without documents, or none in the collections / ids a search is limited
    to. ``str(err)`` says which and how to add or list documents."""

    status = 404


class UnknownScopeError(EmptyStoreError):
    """A request named collections or document ids that hold no document
    the caller may see (whether they exist for another caller or not at
    all: the message is the same, :func:`pilar.query.unknown_scope`)."""


class ConfigError(PilarError):
    """A setting is missing or invalid (``str(err)`` names it)."""

    status = 500


class NotSupportedError(ConfigError):
    """What was asked needs another backend than the configured one
    (Cypher on the embedded graph: ``PILAR_GRAPH=neo4j``)."""

    status = 501


class ReaderNotConfiguredError(ConfigError):
    """No reader model server is configured (``PILAR_LLM_BASE_URL`` or
    ``PILAR_READER_BASE_URL``)."""

    status = 503


class LLMError(PilarError):
    """A call to the OpenAI-compatible model server (:mod:`pilar.llm`) failed.
    ``str(err)`` is one line naming the server and the reason; served, a
    bad gateway (the model server). ``status_code`` is the model server's
    HTTP status when it sent one."""

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
