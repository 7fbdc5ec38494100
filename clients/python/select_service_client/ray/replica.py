"""Replica-side helper: an engine that streams tells select-service where its request stands.

Inside a deployment method that ``SelectServiceRouter`` routed::

    from select_service_client.ray import report_output_block, report_prefill_complete

    async def generate(self, prompt, request_token_ids, max_tokens):
        async for i, token in enumerate_tokens(...):
            if i == 0:
                await report_prefill_complete()      # first token: prefill load drops
            if (len(request_token_ids) + i) % block_size == 0:
                await report_output_block()          # this token opened a KV block
            yield token

The reservation id is the router's (``selection_id_for``): app, deployment and Serve's
``internal_request_id`` of the request being served (the replica's request context,
python/ray/serve/context.py). Reports never raise for the service's sake: they return False when
the request holds no booking (it took Serve's default choice) or the service did not answer
(logged once per outage), so the stream goes on.
"""
from __future__ import annotations

import asyncio
import logging
import os
import weakref
from typing import Awaitable, Callable, Dict, Optional

from ..aio import AsyncSelectServiceClient
from ..errors import SelectServiceConnectionError, SelectServiceError
from ._availability import Availability
from ._ids import selection_id_for
from ._settings import URL_ENV

log = logging.getLogger("ray.serve.select_service")


def current_reservation_id() -> Optional[str]:
    """The reservation id of the request this replica is serving, or None outside a request."""
    from ray import serve
    from ray.serve.context import _get_serve_request_context

    request = _get_serve_request_context()
    if request is None or not request._internal_request_id:
        return None
    replica = serve.get_replica_context()
    return selection_id_for(replica.app_name, replica.deployment, request._internal_request_id)


class ReplicaReporter:
    """Reports for one service URL; one HTTP client per event loop, made on first use."""

    def __init__(self, select_service_url: Optional[str] = None, *, token: Optional[str] = None,
                 timeout_s: float = 1.0, retry_after_s: float = 1.0, transport: str = "auto") -> None:
        url = select_service_url or os.environ.get(URL_ENV)
        if not url:
            raise ValueError(f"ReplicaReporter needs select_service_url (or the {URL_ENV} environment variable)")
        self.url = url
        self._token = token
        self._timeout_s = timeout_s
        self._transport = transport
        self._clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncSelectServiceClient]" = \
            weakref.WeakKeyDictionary()
        self._availability = Availability(url, retry_after_s, log, "replica reports")
        self.sent = 0

    def _client(self) -> AsyncSelectServiceClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = AsyncSelectServiceClient(self.url, timeout=self._timeout_s, token=self._token,
                                                                    transport=self._transport)
        return client

    async def prefill_complete(self, reservation_id: Optional[str] = None) -> bool:
        """``POST /reservations/{id}/prefill_complete``; True when the service took it."""
        return await self._report("prefill_complete", reservation_id, lambda c, rid: c.prefill_complete(rid))

    async def output_block(self, reservation_id: Optional[str] = None, decay_fraction: Optional[float] = None) -> bool:
        """``POST /reservations/{id}/output_block``: one more block of output; True when taken."""
        return await self._report("output_block", reservation_id, lambda c, rid: c.output_block(rid, decay_fraction))

    async def _report(self, what: str, reservation_id: Optional[str],
                      call: Callable[[AsyncSelectServiceClient, str], Awaitable[None]]) -> bool:
        rid = reservation_id or current_reservation_id()
        if rid is None:
            raise RuntimeError(f"report_{what}: not inside a Serve request; pass reservation_id=")
        if not self._availability.should_try():
            return False
        try:
            await call(self._client(), rid)
        except SelectServiceConnectionError as err:
            self._availability.failed(err)
            return False
        except SelectServiceError as err:
            self._availability.answered()
            if err.status != 404:  # 404: not booked (Serve's default choice) or already freed
                self._availability.rejected(err.status, err.error)
            return False
        self._availability.answered()
        self.sent += 1
        return True


_REPORTERS: Dict[Optional[str], ReplicaReporter] = {}


def reporter(select_service_url: Optional[str] = None) -> ReplicaReporter:
    """The shared reporter of a URL (default: ``SELECT_SERVICE_URL``)."""
    found = _REPORTERS.get(select_service_url)
    if found is None:
        found = _REPORTERS[select_service_url] = ReplicaReporter(select_service_url)
    return found


async def report_prefill_complete(select_service_url: Optional[str] = None, *,
                                  reservation_id: Optional[str] = None) -> bool:
    """The request's first token is out: its prefill stops counting. True when the service took it."""
    return await reporter(select_service_url).prefill_complete(reservation_id)


async def report_output_block(select_service_url: Optional[str] = None, *, reservation_id: Optional[str] = None,
                              decay_fraction: Optional[float] = None) -> bool:
    """The request generated one more KV block (call every ``block_size`` output tokens)."""
    return await reporter(select_service_url).output_block(reservation_id, decay_fraction)
