"""``POST /v1/answer``: the reader's answer with ``[n]`` citations resolved to
supports (PILAR App. H.2-H.3), as JSON or as server-sent events.

The packet is scoped as ``/v1/search`` scopes it (:func:`pilar.api.scoping.answer`).
Errors are problem+json: no reader configured 503, the reader timing out
504, its model server failing otherwise 502 (:mod:`pilar.api.problems`).
A streamed answer reads its first delta before the response starts, so a
reader that fails at once gets the same problem+json; one that fails midway
ends the stream with an ``error`` event holding the problem.
"""

# no ``from __future__ import annotations``: the body model is built per settings

import json
from collections.abc import Iterator
from http import HTTPStatus

from fastapi import APIRouter, Request
from fastapi.sse import EventSourceResponse, format_sse_event

from pilar.api import scoping
from pilar.api.deps import RATE_LIMITED, Caller, PathsDep, PilarDep, rate_limit
from pydantic import BaseModel

from pilar.api.models import AnswerResponse, Problem, answer_request, answer_response
from pilar.config import Settings
from pilar.errors import LLMError

SSE = "text/event-stream"
STREAM_DOC = ("`delta` events, each `{\"text\": ...}` (the reply as it is generated), then one "
              "`answer` event holding the whole answer (AnswerResponse); a reader failing "
              "midway ends the stream with an `error` event holding a Problem.")

SSE_ITEM = {"type": "object", "required": ["event", "data"], "properties": {
    "event": {"type": "string", "enum": ["delta", "answer", "error"]},
    "data": {"type": "string", "contentMediaType": "application/json"}}}
"""One event of the stream, as OpenAPI 3.2's ``itemSchema`` (the shape
FastAPI declares for its own event streams)."""


def _event(name: str, data: str) -> bytes:
    return format_sse_event(data_str=data, event=name)


def answer_events(first: str, deltas: Iterator[str], stream, shown) -> Iterator[bytes]:
    """The SSE body of a streamed answer (an :class:`~pilar.reader.AnswerStream`):
    ``first`` (already read) and the rest of ``deltas`` as ``delta`` events,
    then ``answer`` (or ``error``), its sources shown through ``shown``."""
    try:
        yield _event("delta", json.dumps({"text": first}, ensure_ascii=False))
        for text in deltas:
            yield _event("delta", json.dumps({"text": text}, ensure_ascii=False))
        yield _event("answer", answer_response(stream.answer, shown).model_dump_json())
    except LLMError as exc:
        problem = Problem(title=HTTPStatus(exc.status).phrase, status=exc.status,
                          detail=f"reader failed: {exc}")
        yield _event("error", problem.model_dump_json(exclude_none=True))


ANSWER_DESCRIPTION = (
    "Answer a question from pilar's documents: the reader answers from the evidence packet "
    "alone, citing its items as [n]; returns the answer, its citations resolved to supports "
    "(document, page, section path, bbox or table cell), flags and the packet.")


def run_answer(pilar, caller, req: BaseModel, shown) -> AnswerResponse:
    """One (not streamed) answer for ``caller`` (shared by REST and MCP) from
    an :func:`~pilar.api.models.answer_request` instance, sources shown
    through ``shown`` (:meth:`pilar.api.paths.ServerPaths.shown`)."""
    return answer_response(scoping.answer(pilar, caller, req), shown)


def routes(settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["answer"],
                       responses={401: {"model": Problem}, 422: {"model": Problem}})
    AnswerRequest = answer_request(settings)

    @router.post("/answer", response_model=AnswerResponse, dependencies=[rate_limit("answer")],
                 responses={**RATE_LIMITED,
        200: {"content": {SSE: {"itemSchema": SSE_ITEM}}, "description":
              "the answer (JSON), or with `stream` server-sent events: " + STREAM_DOC},
        502: {"model": Problem, "description": "the reader's model server failed"},
        404: {"model": Problem, "description": "the collections or documents named hold "
                                               "no document"},
        503: {"model": Problem, "description": "no reader is configured"},
        504: {"model": Problem, "description": "the reader timed out"}})
    def answer(pilar: PilarDep, caller: Caller, paths: PathsDep, req: AnswerRequest,
               request: Request):
        """Answer ``question`` from its packet (at most ``budget_tokens``
        reader tokens), citing the packet's items as ``[n]``; citations come
        resolved to supports (document, page, section path, bbox or table
        cell), with flags (no_citation, unknown_citation, not_in_evidence,
        truncated). ``stream`` (or ``Accept: text/event-stream``): see the
        200 response."""
        if not (req.stream or SSE in request.headers.get("accept", "")):
            return run_answer(pilar, caller, req, paths.shown)
        result = scoping.answer(pilar, caller, req, stream=True)
        deltas = iter(result)
        # the first delta before the response starts: a reader failing at once (or
        # replying nothing, which finishing the stream reports) gets problem+json
        first = next(deltas, "")
        return EventSourceResponse(answer_events(first, deltas, result, paths.shown))

    return router
