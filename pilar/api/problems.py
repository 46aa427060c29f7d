"""Errors as ``application/problem+json`` (RFC 9457), and no stack traces.

Every error a route raises becomes a :class:`~pilar.api.models.Problem`
(:func:`described`, shared with the MCP tools): HTTP errors keep their
status, validation errors are 422 with the fields named, ``ValueError`` /
``TypeError`` from the facade (bad arguments) are 422, pilar's errors the
status beside their class in :mod:`pilar.errors` (nothing to read 404 with
the same words as every face, a feature the configured backends lack 501,
a store that fails 503, no reader 503, a reader timing out 504, its model
server failing otherwise 502), anything else a 500 whose detail says
nothing of the code (the trace goes to the server log only).
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from pilar.api.models import Problem
from pilar.errors import LLMError, PilarError, StoreError

log = logging.getLogger("pilar.api")
MEDIA_TYPE = "application/problem+json"


def problem_body(status: int, detail: str | None = None, errors: list | None = None) -> dict:
    """The problem+json body (a :class:`Problem` as JSON) of ``status``
    with its standard title; the MCP tools send it as a JSON-RPC error's ``data``."""
    body = Problem(title=HTTPStatus(status).phrase, status=status, detail=detail, errors=errors)
    return jsonable_encoder(body.model_dump(exclude_none=True))


def problem(status: int, detail: str | None = None, errors: list | None = None,
            headers: dict | None = None) -> JSONResponse:
    """A problem+json response with ``status``'s standard title."""
    return JSONResponse(problem_body(status, detail, errors), status_code=status,
                        media_type=MEDIA_TYPE, headers=headers)


def _first_line(exc: Exception, default: str) -> str:
    return str(exc).splitlines()[0] if str(exc) else default


def described(exc: Exception) -> tuple[int, str]:
    """``(status, detail)`` of an error raised while serving a request, the
    one table of REST and MCP: pydantic's validation 422 (``field: message``),
    ``ValueError``/``TypeError`` 422, an HTTP error its own status, pilar's
    errors the ``status`` beside their class (:mod:`pilar.errors`) with their
    message (the reader's prefixed ``reader failed:``; a failing store's
    replaced by a pointer to ``/readyz``, its cause logged), anything else
    500 saying nothing of the code."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return 422, f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}"
    if isinstance(exc, (ValueError, TypeError)):
        return 422, _first_line(exc, "invalid argument")
    if isinstance(exc, StarletteHTTPException):
        return exc.status_code, exc.detail if isinstance(exc.detail, str) else ""
    if isinstance(exc, LLMError):
        return exc.status, f"reader failed: {exc}"
    if isinstance(exc, StoreError) and exc.status == 503:
        return 503, "a store is unavailable; see /readyz"
    if isinstance(exc, PilarError):
        return exc.status, _first_line(exc, "request refused")
    return 500, "the server failed on this request; the error is logged"


def install(app: FastAPI) -> None:
    """Register the handlers on ``app`` (statuses and details: :func:`described`)."""

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        status, detail = described(exc)
        return problem(status, detail or None, headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        errors = _validation_errors(exc)
        first = errors[0] if errors else {}
        where = ".".join(str(x) for x in first.get("loc", []))
        return problem(422, f"{where}: {first.get('msg', 'invalid request')}", errors)

    async def error(request: Request, exc: Exception):
        status, detail = described(exc)
        if status >= 500 and isinstance(exc, PilarError):
            log.warning("error on %s: %s", request.url.path, exc)
        elif status == 500:
            log.error("unhandled error on %s %s", request.method, request.url.path,
                      exc_info=exc)
        return problem(status, detail)

    # pilar's errors and bad arguments are answered where they are raised;
    # anything else by the server-error layer (Exception), logged with its trace
    for kind in (ValidationError, ValueError, TypeError, PilarError, Exception):
        app.add_exception_handler(kind, error)


def _validation_errors(exc: RequestValidationError) -> list[dict]:
    return [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()]


COMMON_ERRORS = (400, 413, 422, 500)
"""Statuses any operation may answer: unreadable body, body too large,
invalid input, a server failure."""


def document_errors(schema: dict) -> dict:
    """``schema`` (OpenAPI) with every 4xx/5xx answer of every operation
    described as ``application/problem+json`` with the :class:`Problem`
    schema, the common errors (:data:`COMMON_ERRORS`, and 401 where keys
    apply) added to each, and FastAPI's own validation-error schema dropped.
    Answers declared with another model (``/readyz``'s 503) are kept."""
    ref = {"$ref": "#/components/schemas/Problem"}
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["Problem"] = Problem.model_json_schema()
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    for item in schema.get("paths", {}).values():
        for op in item.values():
            responses = op.setdefault("responses", {})
            wanted = set(COMMON_ERRORS) | ({401} if op.get("security") else set())
            for status in wanted:
                responses.setdefault(str(status), {})
            for status, response in responses.items():
                declared = response.get("content", {}).get("application/json", {})
                if status.isdigit() and int(status) >= 400 and declared.get("schema", {}).get(
                        "$ref", ref["$ref"]).rsplit("/", 1)[-1] in ("Problem", "HTTPValidationError"):
                    response["content"] = {MEDIA_TYPE: {"schema": ref}}
                    response.setdefault("description", HTTPStatus(int(status)).phrase)
    return schema


PLAIN_DETAILS = {
    413: "the request body is larger than the server accepts "
         "(PILAR_API_MAX_BODY_BYTES; uploads PILAR_API_MAX_UPLOAD_BYTES)",
    "Invalid Host header": "the Host header names a host this server does not answer to "
                           "(PILAR_API_ALLOWED_HOSTS)",
    "Invalid Origin header": "the Origin header names an origin this server does not "
                             "accept (PILAR_API_ALLOWED_HOSTS)",
}
"""Details of the plain error answers of lower layers, by status or by their text."""


class PlainErrorsAsProblems:
    """ASGI middleware: error answers that lower layers send as plain text
    or without a content type (Starlette's request-body limit answers 413
    ``Content Too Large``; the MCP SDK's Host and Origin checks 421 and 403)
    go out as problem+json instead, the detail from :data:`PLAIN_DETAILS`
    or the text itself; every other response passes untouched."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: dict | None = None
        text = b""

        async def send_problem_instead(message):
            nonlocal held, text
            if message["type"] == "http.response.start" and message["status"] >= 400:
                types = [v for k, v in message.get("headers", []) if k == b"content-type"]
                if not types or types[0].startswith(b"text/plain"):
                    held = message
                    return
            if held is not None:
                if message["type"] == "http.response.body":
                    text += message.get("body", b"")[:1000]
                    if not message.get("more_body"):
                        said = text.decode("utf-8", "replace").strip()
                        detail = (PLAIN_DETAILS.get(held["status"]) or PLAIN_DETAILS.get(said)
                                  or said or None)
                        await problem(held["status"], detail)(scope, receive, send)
                return
            await send(message)

        await self.app(scope, receive, send_problem_instead)
