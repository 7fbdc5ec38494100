"""Standard-library transports of the asyncio client (internal).

``AsyncioTransport``: HTTP/1.1 over asyncio protocols, a pool of keep-alive connections, no
thread and no dependency. It speaks only what the service answers: a status line, headers, and a
body framed by ``Content-Length`` or chunked. ``ThreadTransport``: the blocking client's transport
in the loop's executor (for code that wants exactly the stdlib client's behaviour).
"""
from __future__ import annotations

import asyncio
import queue
import ssl
from typing import Dict, List, Optional, Tuple

from ._aio_transport import check_base_url
from ._transport import Transport, split_base_url
from .errors import SelectServiceConnectionError, SelectServiceTimeout


class _Connection(asyncio.Protocol):
    """One connection; one request at a time. ``response`` resolves to ``(status, body, keep_alive)``."""

    def __init__(self) -> None:
        self.transport: Optional[asyncio.Transport] = None
        self.buf = bytearray()
        self.response: Optional["asyncio.Future[Tuple[int, bytes, bool]]"] = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.response is not None and not self.response.done():
            try:
                parsed = _parse(self.buf)
            except ValueError as err:
                self.response.set_exception(ConnectionError(f"bad response: {err}"))
                return
            if parsed is not None:
                self.buf.clear()
                self.response.set_result(parsed)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.closed = True
        if self.response is not None and not self.response.done():
            self.response.set_exception(ConnectionResetError("the service closed the connection"))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _parse(buf: bytearray) -> Optional[Tuple[int, bytes, bool]]:
    """A complete response in ``buf``, or None while more bytes are needed."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ValueError(f"status line {lines[0]!r}")
    status = int(parts[1])
    headers: Dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    keep_alive = headers.get("connection", "").lower() != "close" and parts[0] == "HTTP/1.1"
    start = end + 4
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        pos = start
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = int(bytes(buf[pos:eol]).split(b";")[0], 16)
            if len(buf) < eol + 2 + size + 2:
                return None
            if size == 0:
                return status, bytes(body), keep_alive
            body += buf[eol + 2:eol + 2 + size]
            pos = eol + 2 + size + 2
    length = int(headers.get("content-length", "0"))
    if len(buf) < start + length:
        return None
    return status, bytes(buf[start:start + length]), keep_alive


class AsyncioTransport:
    """Keep-alive HTTP/1.1 connections over asyncio (use from the loop of its first call)."""

    name = "asyncio"

    def __init__(self, base_url: str, headers: Dict[str, str], ssl_context: Optional[ssl.SSLContext] = None,
                 max_connections: int = 64) -> None:
        parts = split_base_url(base_url.rstrip("/"))
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.https else 80)
        self.prefix = parts.path
        self.ssl_context = ssl_context or (ssl.create_default_context() if self.https else None)
        host_header = self.host if parts.port is None else f"{self.host}:{self.port}"
        self.fixed = "".join(f"{k}: {v}\r\n" for k, v in {"Host": host_header, **headers}.items())
        self.max_idle = max_connections
        self._idle: List[_Connection] = []

    async def _connect(self, timeout: float) -> _Connection:
        loop = asyncio.get_running_loop()
        _, conn = await asyncio.wait_for(loop.create_connection(_Connection, self.host, self.port, ssl=self.ssl_context),
                                         timeout)
        return conn

    async def request(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str],
                      timeout: float, retry: bool) -> Tuple[int, bytes]:
        head = f"{method} {self.prefix}{path} HTTP/1.1\r\n{self.fixed}"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        data = (head + f"Content-Length: {len(body) if body else 0}\r\n\r\n").encode("latin-1") + (body or b"")
        loop = asyncio.get_running_loop()
        while True:
            conn = None
            while self._idle and conn is None:
                conn = self._idle.pop()
                if conn.closed:
                    conn = None
            reused = conn is not None
            try:
                if conn is None:
                    conn = await self._connect(timeout)
                fut = conn.response = loop.create_future()
                conn.transport.write(data)  # type: ignore[union-attr]
                timer = loop.call_later(timeout, _expire, fut)
                try:
                    status, raw, keep_alive = await fut
                finally:
                    timer.cancel()
            except asyncio.CancelledError:
                if conn is not None:
                    conn.close()  # the answer to this request would otherwise be read by the next one
                raise
            except asyncio.TimeoutError as err:  # before OSError: TimeoutError is one since Python 3.10
                if conn is not None:
                    conn.close()
                raise SelectServiceTimeout(None, f"timed out after {timeout} s", method=method, path=path) from err
            except (OSError, ConnectionError) as err:
                if conn is not None:
                    conn.close()
                if reused and retry and isinstance(err, ConnectionResetError):
                    retry = False  # a kept connection the service had closed: one new try
                    continue
                raise SelectServiceConnectionError(None, f"request failed: {err!r}", method=method, path=path) from err
            conn.response = None
            if keep_alive and not conn.closed and len(self._idle) < self.max_idle:
                self._idle.append(conn)
            else:
                conn.close()
            return status, raw

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _expire(fut: "asyncio.Future[Tuple[int, bytes, bool]]") -> None:
    if not fut.done():
        fut.set_exception(asyncio.TimeoutError())


class ThreadTransport:
    """The stdlib client's blocking transport, one kept connection per pooled instance, each call
    run in the loop's default executor."""

    name = "thread"

    def __init__(self, base_url: str, headers: Dict[str, str], ssl_context: Optional[ssl.SSLContext] = None,
                 max_connections: int = 8) -> None:
        self.base = check_base_url(base_url)
        self.headers = headers
        self.ssl_context = ssl_context
        self._idle: "queue.SimpleQueue[Transport]" = queue.SimpleQueue()

    def _call(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str], timeout: float,
              retry: bool) -> Tuple[int, bytes]:
        try:
            transport = self._idle.get_nowait()
        except queue.Empty:
            transport = Transport(self.base, self.headers, self.ssl_context)
        try:
            return transport.request(method, path, body, headers, timeout, retry)
        finally:
            self._idle.put(transport)

    async def request(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str],
                      timeout: float, retry: bool) -> Tuple[int, bytes]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self._call, method, path, body, headers, timeout, retry)

    async def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return
