"""Shared test helpers: the package on sys.path, the service addresses, and a tiny local HTTP server.

The real-service tests read their base URLs from the environment (the repository's test runner
starts the services on 127.0.0.1 and sets them):

- ``SELECT_SERVICE_URL``: default configuration, replica sync enabled (``--replica-sync-port``).
- ``SELECT_SERVICE_QUEUE_URL``: policy classes from ``DYN_ROUTER_POLICY_CONFIG`` (class ``latency``
  has a queue limit of 0, so it rejects with 429 once a worker is busy) and
  ``--selection-cache-max-entries 0`` (no selection is cached: every replay reservation is a 404).
- ``SELECT_SERVICE_EMPTY_URL``: a service on which no schedulable worker is ever registered.

Without them those tests are skipped; the local-server tests always run.
"""
from __future__ import annotations

import http.server
import itertools
import json
import os
import sys
import threading
import unittest
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SERVICE_URL = os.environ.get("SELECT_SERVICE_URL")
QUEUE_URL = os.environ.get("SELECT_SERVICE_QUEUE_URL")
EMPTY_URL = os.environ.get("SELECT_SERVICE_EMPTY_URL")

_ids = itertools.count(1)


def needs(url: Optional[str], name: str) -> Callable[[Any], Any]:
    return unittest.skipUnless(url, f"{name} is not set (the repository's npm test sets it)")


def unique(prefix: str) -> str:
    """A name no other test (or run against the same service) uses."""
    return f"{prefix}-{os.getpid()}-{next(_ids)}"


def unique_id() -> int:
    """A worker id no other test uses (worker ids are service-wide)."""
    return (os.getpid() << 20) + next(_ids)


def toks(n: int, start: int = 1) -> List[int]:
    return list(range(start, start + n))


# ---- a local HTTP/1.1 server for what a real service cannot show -----------------------------------


@dataclass
class Seen:
    """One request the local server received."""

    method: str
    path: str
    headers: Dict[str, str]
    body: bytes
    connection: int
    """1-based number of the connection it came on."""
    nth_on_connection: int

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


@dataclass
class Answer:
    """What the local server sends: a JSON value (or bytes) with a status. ``close_after`` closes the
    connection after answering without saying so (as a server's keep-alive timeout does)."""

    status: int = 200
    payload: Any = None
    headers: Optional[Dict[str, str]] = None
    close_after: bool = False

    def data(self) -> bytes:
        if isinstance(self.payload, bytes):
            return self.payload
        return json.dumps({"status": "ok"} if self.payload is None else self.payload).encode("utf-8")


# `respond` returning DROP closes the connection without answering (a request lost in a race with
# the server's keep-alive timeout).
DROP = "drop"


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def setup(self) -> None:
        super().setup()
        self.connection_no = self.server.owner.opened()
        self.count = 0

    def log_message(self, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.count += 1
        seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                    self.connection_no, self.count)
        owner = self.server.owner
        with owner.lock:
            owner.seen.append(seen)
        reply = owner.respond(seen)
        if isinstance(reply, str) and reply == DROP:
            self.close_connection = True
            return
        data = reply.data()
        headers = {"Content-Type": "application/json", **(reply.headers or {})}
        self.send_response(reply.status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        if reply.close_after:
            self.close_connection = True

    do_GET = do_POST = do_PATCH = do_DELETE = _handle


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    owner: "LocalServer"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that timed out has closed its end: the late answer has nowhere to go
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class LocalServer:
    """An HTTP/1.1 keep-alive server on 127.0.0.1 (port 0) that records every request and answers
    with ``respond(seen)``; use as a context manager."""

    def __init__(self, respond: Callable[[Seen], Any]) -> None:
        self.respond = respond
        self.seen: List[Seen] = []
        self.connections = 0
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def opened(self) -> int:
        with self.lock:
            self.connections += 1
            return self.connections

    def paths(self, method: Optional[str] = None) -> List[str]:
        with self.lock:
            return [s.path for s in self.seen if method is None or s.method == method]

    def __enter__(self) -> "LocalServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

