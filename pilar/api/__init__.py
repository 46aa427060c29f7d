"""pilar's faces over the network: the REST API (FastAPI) and the MCP server.

``create_app(pilar)`` builds the app; request and response models live in
:mod:`pilar.api.models`, one router per area in :mod:`pilar.api.routes`.
"""

from pilar.api.app import app_from_env, create_app

__all__ = ["app_from_env", "create_app"]
