"""Errors as ``application/problem+json`` (RFC 9457), and no stack traces.

Every error a route raises becomes a :class:`~pilar.api.models.Problem`:
HTTP errors keep their status, validation errors are 422 with the fields
named, ``ValueError``/``TypeError`` from the facade (bad arguments) are 422,
a feature the configured backends lack (``ConfigError``) is 501, a store that fails is 503,
no reader configured (``ReaderNotConfiguredError``) is 503, a reader that
times out is 504 and one whose model server fails otherwise (5xx, refusal,
malformed reply, no connection) is 502 (``LLMError.status``), anything else
is a 500 whose detail says nothing of the code (the trace goes to the
server log only).
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from pilar.api.models import Problem
from pilar.errors import (ConfigError, LLMError, PilarError, ReaderNotConfiguredError,
                          StoreError)

log = logging.getLogger("pilar.api")
MEDIA_TYPE = "application/problem+json"


def problem(status: int, detail: str | None = None, errors: list | None = None,
            headers: dict | None = None) -> JSONResponse:
    """A problem+json response with ``status``'s standard title."""
    body = Problem(title=HTTPStatus(status).phrase, status=status, detail=detail, errors=errors)
    return JSONResponse(jsonable_encoder(body.model_dump(exclude_none=True)), status_code=status,
                        media_type=MEDIA_TYPE, headers=headers)


def _validation_errors(exc: RequestValidationError) -> list[dict]:
    return [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()]


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else None
        return problem(exc.status_code, detail, headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        errors = _validation_errors(exc)
        first = errors[0] if errors else {}
        where = ".".join(str(x) for x in first.get("loc", []))
        return problem(422, f"{where}: {first.get('msg', 'invalid request')}", errors)

    @app.exception_handler(ValueError)
    @app.exception_handler(TypeError)
    async def bad_argument(request: Request, exc: Exception):
        return problem(422, str(exc).splitlines()[0] if str(exc) else "invalid argument")

    @app.exception_handler(ConfigError)
    async def config(request: Request, exc: ConfigError):
        return problem(501, str(exc))

    @app.exception_handler(ReaderNotConfiguredError)
    async def no_reader(request: Request, exc: ReaderNotConfiguredError):
        return problem(exc.status, str(exc))

    @app.exception_handler(LLMError)
    async def reader_failed(request: Request, exc: LLMError):
        log.warning("model server error on %s: %s", request.url.path, exc)
        return problem(exc.status, f"reader failed: {exc}")

    @app.exception_handler(StoreError)
    async def store(request: Request, exc: StoreError):
        log.warning("store error on %s: %s", request.url.path, exc)
        return problem(503, "a store is unavailable; see /readyz")

    @app.exception_handler(PilarError)
    async def pilar_error(request: Request, exc: PilarError):
        return problem(422, str(exc).splitlines()[0] if str(exc) else "request refused")

    @app.exception_handler(Exception)
    async def crash(request: Request, exc: Exception):
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return problem(500, "the server failed on this request; the error is logged")


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


PLAIN_DETAILS = {413: "the request body is larger than the server accepts "
                      "(PILAR_API_MAX_BODY_BYTES; uploads PILAR_API_MAX_UPLOAD_BYTES)"}


class PlainErrorsAsProblems:
    """ASGI middleware: error answers that lower layers send as plain text
    (Starlette's request-body limit answers 413 ``Content Too Large``) go
    out as problem+json instead; every other response passes untouched."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: dict | None = None

        async def send_problem_instead(message):
            nonlocal held
            if message["type"] == "http.response.start" and message["status"] >= 400:
                types = [v for k, v in message.get("headers", []) if k == b"content-type"]
                if types and types[0].startswith(b"text/plain"):
                    held = message
                    return
            if held is not None:
                if message["type"] == "http.response.body" and not message.get("more_body"):
                    await problem(held["status"], PLAIN_DETAILS.get(held["status"]))(
                        scope, receive, send)
                return
            await send(message)

        await self.app(scope, receive, send_problem_instead)
