"""One keep-alive HTTP/1.1 connection to the service (internal)."""
from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
from typing import Dict, Optional, Tuple
from urllib.parse import SplitResult, urlsplit

from .errors import SelectServiceConnectionError, SelectServiceTimeout

# A reused connection that fails with one of these before any response byte arrived was most
# likely closed by the server while idle (keep-alive timeout): worth one retry on a new connection.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
# Sending that fails with one of these may mean the service answered before reading the whole
# body (413 over its body limit, 401, 415) and stopped reading: that answer may still be readable.
_SEND_CUT = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


def split_base_url(base_url: str) -> SplitResult:
    """The parts of a service base URL; ValueError for anything but ``http(s)://host[:port][/prefix]``."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"base_url must be an http:// or https:// URL (got {base_url!r})")
    if not parts.hostname:
        raise ValueError(f"base_url has no host (got {base_url!r})")
    if parts.query or parts.fragment:
        raise ValueError(f"base_url must not have a query or fragment (got {base_url!r})")
    return parts


class Transport:
    """Sends requests over one reused connection, serialized by a lock."""

    def __init__(self, base_url: str, headers: Dict[str, str], ssl_context: Optional[ssl.SSLContext] = None) -> None:
        parts = split_base_url(base_url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.headers = headers
        self.ssl_context = ssl_context
        self.connections_opened = 0
        self._conn: Optional[http.client.HTTPConnection] = None
        self._lock = threading.Lock()

    def new_connection(self, timeout: float) -> http.client.HTTPConnection:
        """A new (not yet connected) connection of the URL's scheme."""
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.ssl_context)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _usable(self) -> Optional[http.client.HTTPConnection]:
        """The kept connection if it is still open: an idle socket that is readable has been closed
        by the server (or sent something unasked), so it is dropped before a request is written."""
        conn = self._conn
        if conn is None or conn.sock is None:
            return None
        try:
            readable, _, _ = select.select([conn.sock], [], [], 0)
        except (OSError, ValueError):
            readable = [conn.sock]
        if readable:
            self._drop()
            return None
        return conn

    def _early_answer(self, conn: http.client.HTTPConnection) -> Optional[Tuple[int, bytes]]:
        """The answer the service sent before it stopped reading the request, if one arrived (the
        connection is dropped either way: the service closes it after such an answer)."""
        try:
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException):
            return None
        finally:
            self._drop()
        return resp.status, data

    def request(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str], timeout: float,
                retry: bool) -> Tuple[int, bytes]:
        """Sends one request and reads the whole response: ``(status, body)``.

        ``retry``: the request is idempotent, so a failure of a reused connection before any answer
        is retried once on a new connection.
        """
        target = self.prefix + path
        all_headers = dict(self.headers)
        all_headers.update(headers)
        with self._lock:
            attempt = 0
            while True:
                attempt += 1
                conn = self._usable()
                reused = conn is not None
                if conn is None:
                    conn = self._conn = self.new_connection(timeout)
                    self.connections_opened += 1
                try:
                    conn.timeout = timeout
                    if conn.sock is not None:
                        conn.sock.settimeout(timeout)
                    try:
                        conn.request(method, target, body=body, headers=all_headers)
                    except _SEND_CUT:
                        early = self._early_answer(conn)
                        if early is None:
                            raise
                        return early
                    resp = conn.getresponse()
                    data = resp.read()
                    if resp.will_close:
                        self._drop()
                    return resp.status, data
                except socket.timeout as err:
                    self._drop()
                    raise SelectServiceTimeout(None, f"timed out after {timeout} s", method=method, path=path) from err
                except _STALE as err:
                    self._drop()
                    if reused and retry and attempt == 1:
                        continue
                    raise SelectServiceConnectionError(None, f"connection lost: {err!r}", method=method, path=path) from err
                except (OSError, http.client.HTTPException) as err:
                    self._drop()
                    raise SelectServiceConnectionError(None, f"request failed: {err!r}", method=method, path=path) from err
