"""The request every face sends: question, budget, k, profile and scope.

One model, one set of limits, one set of messages, for the CLI, the Python
API (:meth:`pilar.Pilar.search` / ``ask`` / ``evaluate``), REST, MCP and
the web page:

- :class:`Query`: a checked request with the defaults of
  :class:`~pilar.config.Settings` filled in (``PILAR_BUDGET``,
  ``PILAR_TOP_K``, ``PILAR_PROFILE``); the facade builds one per call.
- :func:`request_model`: the pydantic model of the same request on the
  wire (REST bodies, MCP tool arguments, the OpenAI tool schema, the web
  page's form bounds), its JSON schema carrying the limits of ``settings``
  and unknown fields refused.
  Its validators are the checks :class:`Query` runs, so a value refused
  anywhere is refused everywhere, with the same message.

Limits (from ``settings``): a question of 1 to ``PILAR_MAX_QUERY_CHARS``
characters with a letter or digit; a budget of :data:`~pilar.config.MIN_BUDGET`
to ``PILAR_MAX_BUDGET`` reader tokens; ``k`` of 1 to ``PILAR_MAX_K`` pages;
a profile of :data:`~pilar.config.PROFILES`; at most :data:`MAX_IDS`
collections or document ids, each collection a collection name
(:func:`~pilar.model.check_collection`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model
from pydantic_core import PydanticCustomError

from pilar.config import MIN_BUDGET, PROFILES, Settings
from pilar.errors import UnknownScopeError
from pilar.model import COLLECTION_PATTERN, Document, Scope, check_collection

MAX_IDS = 1000
"""Most document ids or collections one request may name."""
_WORDY = re.compile(r"[^\W_]")
"""A letter or digit: a question without one has nothing to search for."""


def refused(message: str) -> PydanticCustomError:
    """A refusal of a request's value: a ``ValueError`` whose text is
    ``message`` as is, and, inside a pydantic validator, an error whose
    ``msg`` is ``message`` (no "Value error, " prefix), so every face says
    the same words."""
    return PydanticCustomError("pilar_query", "{message}", {"message": message})


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of a request: characters of a question, tokens of a
    budget, pages of ``k``."""

    question_chars: int
    max_budget: int
    max_k: int

    @classmethod
    def of(cls, settings: Settings) -> "Limits":
        return cls(settings.max_query_chars, settings.max_budget, settings.max_k)


def check_question(question: Any, limit: int) -> str:
    """``question`` if it is a string with a letter or digit, at most
    ``limit`` characters; raises ``ValueError`` (:func:`refused`) otherwise."""
    if not isinstance(question, str) or not question.strip():
        raise refused("the question is empty")
    if not _WORDY.search(question):
        raise refused("the question has no words (no letter or digit)")
    if len(question) > limit:
        raise refused(f"the question is {len(question):,} characters, over the "
                      f"{limit:,}-character limit (PILAR_MAX_QUERY_CHARS)")
    return question


def _integer(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return value


def check_budget(budget: Any, limit: int) -> int:
    """``budget`` (reader tokens) if it is an int from :data:`MIN_BUDGET` to
    ``limit``; ``TypeError`` for a non-int, ``ValueError`` out of bounds."""
    budget = _integer("budget", budget)
    if budget < MIN_BUDGET:
        raise refused(f"budget must be at least {MIN_BUDGET} tokens, got {budget}")
    if budget > limit:
        raise refused(f"budget must be at most {limit:,} tokens (PILAR_MAX_BUDGET), "
                      f"got {budget:,}")
    return budget


def check_k(k: Any, limit: int) -> int:
    """``k`` (pages) if it is an int from 1 to ``limit``; ``TypeError`` for
    a non-int, ``ValueError`` out of bounds."""
    k = _integer("k", k)
    if k < 1:
        raise refused(f"k must be at least 1, got {k}")
    if k > limit:
        raise refused(f"k must be at most {limit} (PILAR_MAX_K), got {k}")
    return k


def check_profile(profile: Any) -> str:
    """``profile`` if it names one of :data:`~pilar.config.PROFILES`, else ``ValueError``."""
    if profile not in PROFILES:
        raise refused(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    return profile


def check_scope(collections: Any, doc_ids: Any) -> Scope:
    """The :class:`~pilar.model.Scope` of a read (None = no limit on that
    field); raises ``TypeError`` when ``collections`` or ``doc_ids`` is not
    None or a list of strings, ``ValueError`` for more than :data:`MAX_IDS`
    of either or a string that is no collection name."""
    for name, value in (("collections", collections), ("doc_ids", doc_ids)):
        if value is None:
            continue
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"{name} must be a list of strings, got {value!r}")
        if len(value) > MAX_IDS:
            raise refused(f"{name} may name at most {MAX_IDS}, got {len(value)}")
    for name in collections or ():
        check_collection(name)
    return Scope.of(collections, doc_ids)


@dataclass(frozen=True, slots=True)
class Query:
    """A checked request: ``question``, ``budget`` (reader tokens), ``k``
    (pages ranked), ``profile`` and ``scope`` (collections and document ids
    a read may see)."""

    question: str
    budget: int
    k: int
    profile: str
    scope: Scope

    @classmethod
    def of(cls, settings: Settings, question: Any, budget: Any = None, k: Any = None,
           profile: Any = None, collections: Any = None, doc_ids: Any = None) -> "Query":
        """The request with ``settings``' defaults for what is None, checked
        in this order: question, budget, k, scope, profile. Raises
        ``ValueError`` or ``TypeError`` as the ``check_*`` functions say."""
        question = check_question(question, settings.max_query_chars)
        return cls(question, *options(settings, budget, k, profile, collections, doc_ids))


def options(settings: Settings, budget: Any = None, k: Any = None, profile: Any = None,
            collections: Any = None, doc_ids: Any = None) -> tuple[int, int, str, Scope]:
    """``(budget, k, profile, scope)`` of a request (an evaluation's, which
    has many questions), checked and defaulted as :meth:`Query.of` does."""
    limits = Limits.of(settings)
    budget = check_budget(settings.budget if budget is None else budget, limits.max_budget)
    k = check_k(settings.top_k if k is None else k, limits.max_k)
    scope = check_scope(collections, doc_ids)
    return budget, k, check_profile(settings.profile if profile is None else profile), scope


def unknown_scope(collections: list[str], doc_ids: list[str], named: bool) -> str:
    """What a request limited to ``collections`` or ``doc_ids`` that hold
    no document the caller may see is told (the same whether they exist for
    someone else or not at all); ``named``: collections were named too."""
    if collections:
        return (f"no documents in collection{'s' * (len(collections) > 1)} "
                f"{', '.join(map(repr, collections))}: list them with `pilar docs` "
                "or GET /v1/documents")
    where = " in the collections given" if named else ""
    return (f"no document with id{'s' * (len(doc_ids) > 1)} {', '.join(map(repr, doc_ids))}"
            f"{where}: list them with `pilar docs` or GET /v1/documents")


def require_scope(scope: Scope, documents: Callable[..., list[Document]]) -> None:
    """Raise :class:`~pilar.errors.UnknownScopeError` (:func:`unknown_scope`)
    unless every collection and document id of ``scope`` holds a stored
    document within the rest of it; ``documents(doc_ids, collections=...)``
    lists the stored documents (the graph's, one read). Nothing is read for
    an unlimited scope."""
    if scope.unlimited:
        return
    names = list(scope.collections) if scope.collections is not None else None
    stored = documents(list(scope.doc_ids) if scope.doc_ids else None, collections=names)
    # the documents first: with ids given, ``stored`` holds only those, so a
    # collection without them is not a collection without documents
    if scope.doc_ids is not None and (absent := [
            d for d in scope.doc_ids if d not in {doc.doc_id for doc in stored}]):
        raise UnknownScopeError(unknown_scope([], absent, scope.collections is not None))
    if scope.collections and (absent := [c for c in scope.collections
                                         if c not in {d.collection for d in stored}]):
        raise UnknownScopeError(unknown_scope(absent, [], True))


def _collection(name: str) -> str:
    try:
        return check_collection(name)
    except ValueError as exc:
        raise refused(str(exc)) from None


def _bounded(check, schema: dict):
    """A validator running ``check`` with the JSON schema bounds it enforces."""
    return (AfterValidator(check), Field(json_schema_extra=schema))


class WireRequest(BaseModel):
    """Base of the :func:`request_model` models: unknown fields refused."""

    model_config = ConfigDict(extra="forbid")


@functools.cache
def _request_model(limits: Limits, name: str, question: str | None, budget: str,
                   default_budget: int, default_k: int, default_profile: str, doc: str,
                   base: type[BaseModel]) -> type[BaseModel]:
    check_q = functools.partial(check_question, limit=limits.question_chars)
    question_type = Annotated[str, *_bounded(check_q, {
        "minLength": 1, "maxLength": limits.question_chars})]
    budget_type = Annotated[int, *_bounded(
        functools.partial(check_budget, limit=limits.max_budget),
        {"minimum": MIN_BUDGET, "maximum": limits.max_budget})]
    k_type = Annotated[int, *_bounded(functools.partial(check_k, limit=limits.max_k),
                                      {"minimum": 1, "maximum": limits.max_k})]
    collection = Annotated[str, *_bounded(_collection, {"pattern": f"^{COLLECTION_PATTERN}$"})]
    profile = Annotated[str, *_bounded(check_profile, {"enum": list(PROFILES)})]
    fields: dict[str, Any] = {}
    if question is not None:
        fields[question] = (question_type, Field(description="the question, in natural language"))
    fields |= {
        budget: (budget_type | None, Field(
            None, description=f"packet token budget (reader tokens), {MIN_BUDGET} to "
                              f"{limits.max_budget:,} [default: PILAR_BUDGET, here "
                              f"{default_budget:,}]")),
        "k": (k_type | None, Field(None, description=f"pages to rank, 1 to {limits.max_k} "
                                                     f"[default: PILAR_TOP_K, here {default_k}]")),
        "profile": (profile | None, Field(None, description=f"graph-linking profile "
                                                            f"[default: PILAR_PROFILE, here "
                                                            f"{default_profile}]")),
        "collections": (list[collection] | None, Field(
            None, max_length=MAX_IDS, description="only these collections (within the "
                                                  "key's own)")),
    }
    if question is not None:  # a question's own scope (an evaluation has collections only)
        fields["doc_ids"] = (list[str] | None, Field(None, max_length=MAX_IDS,
                                                     description="only these documents"))
    model = create_model(name, __base__=base, __doc__=doc, **fields)
    model.question_field, model.budget_field = question, budget
    return model


def request_model(settings: Settings, name: str, question: str | None = "question",
                  budget: str = "budget", doc: str = "",
                  base: type[BaseModel] = WireRequest) -> type[BaseModel]:
    """The pydantic model of a request on the wire, named ``name``: the
    question as field ``question`` (None: no question, no ``doc_ids``: an
    evaluation's options), the budget as ``budget`` (None = the setting's
    default), ``k``, ``profile``, ``collections`` and ``doc_ids``, after
    the fields of ``base`` (a :class:`WireRequest`; unknown fields
    refused). Its JSON schema holds the limits of ``settings``; its
    validators are :class:`Query`'s checks. Models are cached per limits
    and shape. :func:`query_args` turns an instance into the facade's
    arguments."""
    return _request_model(Limits.of(settings), name, question, budget, settings.budget,
                          settings.top_k, settings.profile, doc, base)


def query_args(request: BaseModel) -> dict[str, Any]:
    """The keyword arguments of :meth:`pilar.Pilar.search` (and ``ask``)
    for an instance of a :func:`request_model` model."""
    model = type(request)
    return {"question": getattr(request, model.question_field),
            "budget": getattr(request, model.budget_field), "k": request.k,
            "profile": request.profile, "collections": request.collections,
            "doc_ids": request.doc_ids}
