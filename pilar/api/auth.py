"""API keys: ``PILAR_API_KEYS`` entries ``KEY`` (every collection) or
``KEY:coll1+coll2`` (only those collections), sent as ``Authorization:
Bearer KEY`` or ``X-API-Key: KEY``.

With no key configured the API is open (every collection). Keys are compared
in constant time (:func:`secrets.compare_digest`) against every configured
key. One :func:`authenticate` serves the REST routes (through the FastAPI
security dependencies, so OpenAPI documents both schemes) and the MCP
endpoint.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from pilar.errors import ConfigError
from pilar.model import check_collection


@dataclass(frozen=True, slots=True)
class Access:
    """What a caller may see: ``collections`` None means every collection."""

    collections: frozenset[str] | None = None

    @property
    def unlimited(self) -> bool:
        return self.collections is None

    def allows(self, collection: str) -> bool:
        return self.collections is None or collection in self.collections

    def narrow(self, wanted: list[str] | None) -> frozenset[str] | None:
        """The collections to read: ``wanted`` (None = all) within this access."""
        if wanted is None:
            return self.collections
        wanted_set = frozenset(wanted)
        return wanted_set if self.collections is None else wanted_set & self.collections


OPEN = Access()


@dataclass(frozen=True, slots=True)
class ApiKey:
    secret: bytes
    access: Access


def parse_keys(text: str) -> list[ApiKey]:
    """Keys from ``PILAR_API_KEYS`` (comma-separated ``KEY`` or ``KEY:c1+c2``).

    Raises :class:`ConfigError` naming the entry for an empty key, an empty
    collection list or a name that is no collection name
    (:func:`~pilar.model.check_collection`)."""
    keys = []
    for n, entry in enumerate((e.strip() for e in text.split(",")), 1):
        if not entry:
            continue
        key, sep, colls = entry.partition(":")
        key = key.strip()
        if not key:
            raise ConfigError(f"PILAR_API_KEYS entry {n}: the key is empty")
        access = OPEN
        if sep:
            if not colls.strip():
                raise ConfigError(f"PILAR_API_KEYS entry {n}: no collection after ':'")
            try:
                access = Access(frozenset(check_collection(c.strip()) for c in colls.split("+")))
            except ValueError as exc:
                raise ConfigError(f"PILAR_API_KEYS entry {n}: {exc}") from None
        keys.append(ApiKey(key.encode(), access))
    return keys


class Keyring:
    """The configured keys; :meth:`check` maps a presented key to its access."""

    def __init__(self, keys: list[ApiKey]):
        self.keys = keys

    @property
    def enabled(self) -> bool:
        return bool(self.keys)

    def check(self, presented: str | None) -> Access | None:
        """The access of ``presented``, or None when keys are on and it matches
        none. Every key is compared (constant time each), match or not."""
        if not self.keys:
            return OPEN
        if not presented:
            return None
        given = presented.encode()
        found = None
        for key in self.keys:
            if secrets.compare_digest(given, key.secret) and found is None:
                found = key.access
        return found

    def authenticate(self, headers: Mapping[str, str]) -> Access | None:
        """The access for request ``headers`` (``Authorization: Bearer`` or
        ``X-API-Key``), None when refused."""
        return self.check(presented(headers))


def presented(headers: Mapping[str, str]) -> str | None:
    """The key request ``headers`` present (``Authorization: Bearer KEY``
    wins over ``X-API-Key: KEY``), None without one."""
    found = headers.get("x-api-key")
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        found = token.strip()
    return found


UNAUTHORIZED = HTTPException(401, "a valid API key is needed (Authorization: Bearer KEY "
                             "or X-API-Key: KEY)", headers={"WWW-Authenticate": "Bearer"})

_bearer = HTTPBearer(auto_error=False, description="an entry of PILAR_API_KEYS")
_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="an entry of PILAR_API_KEYS")


async def access(request: Request,
                 bearer: HTTPAuthorizationCredentials | None = Depends(_bearer),
                 header: str | None = Depends(_header)) -> Access:
    """FastAPI dependency: the caller's :class:`Access`; 401 when keys are on
    and none matches."""
    keyring: Keyring = request.app.state.keyring
    found = keyring.check(bearer.credentials if bearer else header)
    if found is None:
        raise UNAUTHORIZED
    return found


async def unlimited(caller: Access = Depends(access)) -> Access:
    """FastAPI dependency: 403 unless the key sees every collection (Cypher)."""
    if not caller.unlimited:
        raise HTTPException(403, "this route needs a key that is not limited to collections")
    return caller
