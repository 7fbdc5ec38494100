"""Transports of the asyncio client (internal): aiohttp when it is installed, else the standard
library's (``_aio_stdlib``).

aiohttp is never required: ``import select_service_client`` does not import this module, and
without aiohttp the async client still works.
"""
from __future__ import annotations

import asyncio
import ssl
from typing import Any, Dict, Optional, Tuple

from ._transport import split_base_url
from .errors import SelectServiceConnectionError, SelectServiceTimeout

try:  # optional: the direct asyncio path
    import aiohttp
except ImportError:  # pragma: no cover - exercised where aiohttp is absent
    aiohttp = None  # type: ignore[assignment]


#: The ``transport`` values of :class:`~select_service_client.aio.AsyncSelectServiceClient`.
TRANSPORTS = ("auto", "aiohttp", "asyncio", "thread")
#: The same, as a message says them: 'auto', 'aiohttp', 'asyncio' or 'thread'.
TRANSPORTS_TEXT = ", ".join(repr(t) for t in TRANSPORTS[:-1]) + f" or {TRANSPORTS[-1]!r}"


def aiohttp_available() -> bool:
    """Whether the aiohttp transport can be used here."""
    return aiohttp is not None


def check_base_url(base_url: str) -> str:
    """The URL without a trailing slash; the same rules as the stdlib client (ValueError)."""
    split_base_url(base_url)
    return base_url.rstrip("/")


class AiohttpTransport:
    """One ``aiohttp.ClientSession`` (keep-alive pool) per transport, made on first use on the
    running loop; use the transport from that loop only."""

    name = "aiohttp"

    def __init__(self, base_url: str, headers: Dict[str, str], ssl_context: Optional[ssl.SSLContext] = None,
                 max_connections: int = 64) -> None:
        if aiohttp is None:
            raise RuntimeError("aiohttp is not installed: pip install aiohttp, or use transport='thread'")
        self.base = check_base_url(base_url)
        self.headers = headers
        self.ssl_context = ssl_context
        self.max_connections = max_connections
        self._session: Optional[Any] = None

    def _open(self) -> Any:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.max_connections, ssl=self.ssl_context if self.ssl_context else None,
                                             keepalive_timeout=30)
            # the service answers JSON; nothing here needs cookies, redirects or auto-decompression
            self._session = aiohttp.ClientSession(connector=connector, headers=self.headers,
                                                  cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False)
        return self._session

    async def request(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str],
                      timeout: float, retry: bool) -> Tuple[int, bytes]:
        session = self._open()
        attempts = 2 if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                async with session.request(method, self.base + path, data=body, headers=headers,
                                           timeout=aiohttp.ClientTimeout(total=timeout), allow_redirects=False) as resp:
                    return resp.status, await resp.read()
            except asyncio.TimeoutError as err:
                raise SelectServiceTimeout(None, f"timed out after {timeout} s", method=method, path=path) from err
            except aiohttp.ServerDisconnectedError as err:
                # a pooled connection the server closed while idle: worth one new try when idempotent
                if attempt < attempts:
                    continue
                raise SelectServiceConnectionError(None, f"connection lost: {err!r}", method=method, path=path) from err
            except (aiohttp.ClientError, OSError) as err:
                raise SelectServiceConnectionError(None, f"request failed: {err!r}", method=method, path=path) from err
        raise AssertionError("unreachable")  # pragma: no cover

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def make_transport(kind: str, base_url: str, headers: Dict[str, str], ssl_context: Optional[ssl.SSLContext],
                   max_connections: int) -> Any:
    """``"auto"`` (aiohttp when installed, else ``"asyncio"``), ``"aiohttp"``, ``"asyncio"`` (the
    standard library's own HTTP/1.1 over asyncio, no thread) or ``"thread"``."""
    from ._aio_stdlib import AsyncioTransport, ThreadTransport

    if kind == "auto":
        kind = "aiohttp" if aiohttp is not None else "asyncio"
    if kind == "aiohttp":
        return AiohttpTransport(base_url, headers, ssl_context, max_connections)
    if kind == "asyncio":
        return AsyncioTransport(base_url, headers, ssl_context, max_connections)
    if kind == "thread":
        return ThreadTransport(base_url, headers, ssl_context, max_connections)
    raise ValueError(f"transport must be {TRANSPORTS_TEXT} (got {kind!r})")
