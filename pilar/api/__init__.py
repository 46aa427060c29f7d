"""pilar's faces over the network: the REST API (FastAPI) and the MCP server.

``create_app(pilar)`` builds the app; request and response models live in
:mod:`pilar.api.models`, one router per area in :mod:`pilar.api.routes`.
Importing this package imports neither FastAPI nor the MCP SDK (the CLI's
``--json`` output uses :mod:`pilar.api.models` alone): ``create_app`` and
``app_from_env`` are loaded from :mod:`pilar.api.app` on first use.
"""

__all__ = ["app_from_env", "create_app"]


def __getattr__(name: str):
    if name in __all__:
        from pilar.api import app

        return getattr(app, name)
    raise AttributeError(f"module 'pilar.api' has no attribute {name!r}")
