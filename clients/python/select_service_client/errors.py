"""The one exception type of the client."""
from __future__ import annotations

import json
from typing import Any, Dict, Optional


class SelectServiceError(Exception):
    """A request the service answered with an error status, or that did not get an answer.

    Attributes:
        status: the HTTP status (``None`` when no response arrived: see
            :class:`SelectServiceConnectionError`).
        error: the service's ``error`` text (or the raw body when it was not the JSON error shape).
        details: the ``details`` object when the service sent one (a 429 queue rejection carries
            ``{"policy_class", "limit_kind", "current", "limit"}``), else ``None``.
        body: the response body as text (``""`` when there was none).
        method, path: the request.
    """

    def __init__(self, status: Optional[int], error: str, details: Optional[Dict[str, Any]] = None,
                 body: str = "", method: str = "", path: str = "") -> None:
        where = f"{method} {path}: " if method else ""
        super().__init__(f"{where}{status if status is not None else 'no response'}: {error}")
        self.status = status
        self.error = error
        self.details = details
        self.body = body
        self.method = method
        self.path = path

    @classmethod
    def from_response(cls, status: int, body: bytes, method: str, path: str) -> "SelectServiceError":
        """Parses an error response: ``{"error": "...", "details": {...}?}``, or any other body as text."""
        text = body.decode("utf-8", errors="replace")
        error = text.strip() or f"HTTP {status}"
        details: Optional[Dict[str, Any]] = None
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("error"), str):
            error = doc["error"]
            if isinstance(doc.get("details"), dict):
                details = doc["details"]
        return cls(status, error, details, text, method, path)


class SelectServiceConnectionError(SelectServiceError):
    """No response: the connection failed or was closed. ``status`` is ``None``; the cause is
    chained (``__cause__``)."""


class SelectServiceTimeout(SelectServiceConnectionError):
    """The call's timeout expired (while connecting or waiting for the response)."""
