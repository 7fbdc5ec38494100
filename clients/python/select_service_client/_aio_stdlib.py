"""Standard-library transports of the asyncio client (internal).

``AsyncioTransport``: HTTP/1.1 over asyncio protocols, a pool of keep-alive connections, no
thread and no dependency; several requests can go in one write on one connection (pipelining, so
the service takes them in that order). It speaks only what the service answers: a status line,
headers, and a body framed by ``Content-Length`` or chunked. ``ThreadTransport``: the blocking client's transport
in the loop's executor (for code that wants exactly the stdlib client's behaviour).
"""
from __future__ import annotations

import asyncio
import queue
import ssl
from collections import deque
from typing import Deque, Dict, List, Optional, Sequence, Tuple

from ._aio_transport import check_base_url
from ._transport import Transport, split_base_url
from .errors import SelectServiceConnectionError, SelectServiceTimeout


Call = Tuple[str, str, Optional[bytes], Dict[str, str]]
"""One request of a pipeline: method, path, body (JSON bytes or None), extra headers."""
Response = Tuple[int, bytes, bool]
"""status, body, keep-alive"""


class _Connection(asyncio.Protocol):
    """One connection. Requests may be pipelined: ``waiting`` holds one future per request sent and
    not yet answered, in order; each resolves to a :data:`Response`."""

    def __init__(self) -> None:
        self.transport: Optional[asyncio.Transport] = None
        self.buf = bytearray()
        self.waiting: Deque["asyncio.Future[Response]"] = deque()
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while self.waiting:
            try:
                parsed = _parse(self.buf)
            except ValueError as err:
                self._fail(ConnectionError(f"bad response: {err}"))
                self.close()
                return
            if parsed is None:
                return
            response, used = parsed
            del self.buf[:used]
            fut = self.waiting.popleft()
            if not fut.done():
                fut.set_result(response)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.closed = True
        self._fail(ConnectionResetError("the service closed the connection"))

    def _fail(self, err: Exception) -> None:
        while self.waiting:
            fut = self.waiting.popleft()
            if not fut.done():
                fut.set_exception(err)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _parse(buf: bytearray) -> Optional[Tuple[Response, int]]:
    """The first complete response in ``buf`` and how many bytes it took, or None while more bytes
    are needed."""
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
                return (status, bytes(body), keep_alive), eol + 4
            body += buf[eol + 2:eol + 2 + size]
            pos = eol + 2 + size + 2
    length = int(headers.get("content-length", "0"))
    if len(buf) < start + length:
        return None
    return (status, bytes(buf[start:start + length]), keep_alive), start + length


class AsyncioTransport:
    """Keep-alive HTTP/1.1 connections over asyncio (use from the loop of its first call)."""

    name = "asyncio"
    pipelines = True

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
        self.connections_made = 0
        """Connections opened so far (the others were reused)."""

    async def _connect(self, timeout: float) -> _Connection:
        loop = asyncio.get_running_loop()
        _, conn = await asyncio.wait_for(loop.create_connection(_Connection, self.host, self.port, ssl=self.ssl_context),
                                         timeout)
        self.connections_made += 1
        return conn

    def _frame(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str]) -> bytes:
        head = f"{method} {self.prefix}{path} HTTP/1.1\r\n{self.fixed}"
        if headers:
            head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        return (head + f"Content-Length: {len(body) if body else 0}\r\n\r\n").encode("latin-1") + (body or b"")

    async def request(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str],
                      timeout: float, retry: bool) -> Tuple[int, bytes]:
        return (await self.request_many([(method, path, body, headers)], timeout, retry))[0]

    async def request_many(self, calls: Sequence[Call], timeout: float, retry: bool) -> List[Tuple[int, bytes]]:
        """Sends ``calls`` in one write on one connection (HTTP/1.1 pipelining): the service reads
        and answers them in this order. ``timeout`` bounds the whole; ``retry``: every call is
        idempotent (a kept connection the service had closed is then tried once more)."""
        data = b"".join(self._frame(*call) for call in calls)
        method, path = calls[-1][0], calls[-1][1]
        loop = asyncio.get_running_loop()
        while True:
            conn = None
            while self._idle and conn is None:
                conn = self._idle.pop()
                if conn.closed:
                    conn = None
            reused = conn is not None
            futs: List["asyncio.Future[Response]"] = []
            try:
                if conn is None:
                    conn = await self._connect(timeout)
                futs = [loop.create_future() for _ in calls]
                conn.waiting.extend(futs)
                conn.transport.write(data)  # type: ignore[union-attr]
                timer = loop.call_later(timeout, _expire, futs)
                try:
                    answers = [await fut for fut in futs]
                finally:
                    timer.cancel()
            except asyncio.CancelledError:
                if conn is not None:
                    conn.close()  # the answers to these requests would otherwise be read by the next ones
                _retrieved(futs)
                raise
            except asyncio.TimeoutError as err:  # before OSError: TimeoutError is one since Python 3.10
                if conn is not None:
                    conn.close()
                _retrieved(futs)
                raise SelectServiceTimeout(None, f"timed out after {timeout} s", method=method, path=path) from err
            except (OSError, ConnectionError) as err:
                if conn is not None:
                    conn.close()
                _retrieved(futs)
                if reused and retry and isinstance(err, ConnectionResetError) and not any(
                        f.done() and not f.exception() for f in futs):
                    retry = False  # a kept connection the service had closed: one new try
                    continue
                raise SelectServiceConnectionError(None, f"request failed: {err!r}", method=method, path=path) from err
            if all(keep_alive for _, _, keep_alive in answers) and not conn.closed and len(self._idle) < self.max_idle:
                self._idle.append(conn)
            else:
                conn.close()
            return [(status, raw) for status, raw, _ in answers]

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _expire(futs: List["asyncio.Future[Response]"]) -> None:
    for fut in futs:
        if not fut.done():
            fut.set_exception(asyncio.TimeoutError())


def _retrieved(futs: List["asyncio.Future[Response]"]) -> None:
    """Marks the futures' exceptions as seen (asyncio would log each one never retrieved)."""
    for fut in futs:
        if fut.done() and not fut.cancelled():
            fut.exception()


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
