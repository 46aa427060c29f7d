"""FastAPI dependencies shared by the routers: the facade, the server paths and the caller.

They are ``async``: none of them blocks, and FastAPI runs a plain ``def``
dependency on the thread pool, where it would wait its turn behind the
searches (``PILAR_API_THREADS`` per process)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from pilar import Pilar
from pilar.api.auth import Access, access, presented, unlimited
from pilar.api.models import Problem
from pilar.api.paths import ServerPaths
from pilar.api.ratelimit import caller_id


async def get_pilar(request: Request) -> Pilar:
    """The :class:`Pilar` the app was built with."""
    return request.app.state.pilar


async def get_paths(request: Request) -> ServerPaths:
    """The server's ingest roots and upload folder (:class:`ServerPaths`)."""
    return request.app.state.paths


PilarDep = Annotated[Pilar, Depends(get_pilar)]
PathsDep = Annotated[ServerPaths, Depends(get_paths)]
Caller = Annotated[Access, Depends(access)]
"""The caller's access (401 when keys are on and none matches)."""
Unlimited = Annotated[Access, Depends(unlimited)]
"""A caller whose key sees every collection (403 otherwise)."""


async def owner(request: Request, caller: Access = Depends(access)) -> str:
    """FastAPI dependency: who the request is (:func:`caller_id`: a digest of
    its key when keys are configured, else its client address): the owner
    of the jobs it submits, the unit of fair scheduling and of rate limits."""
    keys = request.app.state.keyring.enabled
    return caller_id(presented(request.headers) if keys else None,
                     request.client.host if request.client else None)


Owner = Annotated[str, Depends(owner)]
"""The caller as an owner of jobs (after authentication)."""


def rate_limit(operation: str):
    """A route dependency counting the request against the caller's
    ``PILAR_API_RATE_LIMIT`` for ``operation`` (authentication first, so an
    invalid key is a 401, not counted); 429 with ``Retry-After`` when over it."""

    async def limited(request: Request, who: str = Depends(owner)) -> None:
        refused = request.app.state.rate_limiter.refusal(operation, who)
        if refused:
            message, wait = refused
            raise HTTPException(429, message, headers={"Retry-After": str(wait)})

    return Depends(limited)


RATE_LIMITED = {429: {"model": Problem, "description": "over PILAR_API_RATE_LIMIT for this key "
                      "(or address); the Retry-After header says when to try again"}}
"""The answer of a route with :func:`rate_limit`, for its OpenAPI ``responses``."""
