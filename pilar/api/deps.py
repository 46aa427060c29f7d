"""FastAPI dependencies shared by the routers: the facade and the caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from pilar import Pilar
from pilar.api.auth import Access, access, unlimited


def get_pilar(request: Request) -> Pilar:
    """The :class:`Pilar` the app was built with."""
    return request.app.state.pilar


PilarDep = Annotated[Pilar, Depends(get_pilar)]
Caller = Annotated[Access, Depends(access)]
"""The caller's access (401 when keys are on and none matches)."""
Unlimited = Annotated[Access, Depends(unlimited)]
"""A caller whose key sees every collection (403 otherwise)."""
