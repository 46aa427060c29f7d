"""One router per area; each module's ``routes(settings)`` builds its router."""
