"""The asyncio client: the routes a router or an engine calls on its event loop.

``SelectServiceClient`` blocks; code on an event loop (a Ray Serve request router, an async engine)
uses :class:`AsyncSelectServiceClient` instead. It takes and returns the same dataclasses and raises
the same errors. Transports: the standard library's HTTP/1.1 over asyncio (no dependency),
aiohttp (one keep-alive pool), or the blocking client's transport in worker threads; aiohttp is
never a dependency of the plain client (``pip install select-service-client[ray]`` adds it).

Use one client per event loop: its kept connections belong to the loop they were made on.
"""
from __future__ import annotations

import json
import ssl
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

from ._aio_transport import make_transport
from ._wire import Wire, encode
from .client import DEFAULT_TIMEOUT, POLICY_CLASS_HEADER, Body, SelectServiceClient, _body, _query, _segment
from .errors import SelectServiceError, SelectServiceTimeout
from .types import (
    BookingResponse, ModelLoad, ReservationRequest, ReservationResponse, SelectAndReserveRequest, WorkerRecord,
    WorkerRequest,
)
from .version import __version__

W = TypeVar("W", bound=Wire)
_parse = SelectServiceClient._parse

_JSON_HEADERS = {"Content-Type": "application/json"}


class AsyncSelectServiceClient:
    """An asyncio client of one selection service.

    Args:
        base_url, timeout, token, headers, ssl_context: as :class:`SelectServiceClient`.
        transport: ``"auto"`` (aiohttp when installed, else ``"asyncio"``), ``"aiohttp"``,
            ``"asyncio"`` or ``"thread"``.
        max_connections: the size of the keep-alive pool (with aiohttp, parallel calls beyond it
            wait; with ``"asyncio"``, connections beyond it are closed after their call).

    Retries: an idempotent call whose pooled connection the server had closed is sent once more on
    a new connection; bookings and ``output_block`` never are.
    """

    def __init__(self, base_url: str, *, timeout: float = DEFAULT_TIMEOUT, token: Optional[str] = None,
                 headers: Optional[Mapping[str, str]] = None, ssl_context: Optional[ssl.SSLContext] = None,
                 transport: str = "auto", max_connections: int = 64) -> None:
        base = {"Accept": "application/json", "User-Agent": f"select-service-client-python/{__version__}"}
        if token is not None:
            base["Authorization"] = f"Bearer {token}"
        base.update(headers or {})
        self.timeout = timeout
        self._transport = make_transport(transport, base_url, base, ssl_context, max_connections)

    @property
    def transport_name(self) -> str:
        """``"aiohttp"``, ``"asyncio"`` or ``"thread"``: which transport this client uses."""
        return str(self._transport.name)

    async def close(self) -> None:
        """Closes the kept connections (the next call opens new ones)."""
        await self._transport.close()

    async def __aenter__(self) -> "AsyncSelectServiceClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # ---- plumbing ----------------------------------------------------------------------------

    async def request(self, method: str, path: str, body: Body = None, *, headers: Optional[Mapping[str, str]] = None,
                      timeout: Optional[float] = None, idempotent: bool = False,
                      ok: Tuple[int, ...] = (200, 201)) -> Tuple[int, bytes]:
        """Sends a request (JSON body when given); ``(status, raw body)``; a status outside ``ok``
        raises :class:`SelectServiceError`."""
        data: Optional[bytes] = None
        h: Dict[str, str] = dict(headers) if headers else {}
        if body is not None:
            payload = body.to_dict() if isinstance(body, Wire) else encode(dict(body))
            data = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("utf-8")
            h.update(_JSON_HEADERS)
        status, raw = await self._transport.request(method, path, data, h, self.timeout if timeout is None else timeout,
                                                    idempotent)
        if status not in ok:
            raise SelectServiceError.from_response(status, raw, method, path)
        return status, raw

    async def send_in_order(self, calls: Sequence[Tuple[str, str, Optional[bytes]]], *,
                            headers: Optional[Mapping[str, str]] = None,
                            timeout: Optional[float] = None) -> List[Tuple[int, bytes]]:
        """Sends ``(method, path, JSON body bytes or None)`` calls and returns each ``(status, raw
        body)`` in order, whatever the status. Made for frees in front of a booking: the service
        handles each call without a body before the calls after it. The asyncio transport writes
        them at once on one connection (HTTP/1.1 pipelining: one round trip; the service reads
        them in order, and reads a body only after it handled the bodiless calls before it, while
        calls with bodies may overlap); the other transports send each after the previous one's
        answer. ``headers`` go with the last call; ``timeout`` bounds the whole. Never retried."""
        last = len(calls) - 1
        framed = [(method, path, body, {**(_JSON_HEADERS if body is not None else {}),
                                        **(headers if headers and i == last else {})})
                  for i, (method, path, body) in enumerate(calls)]
        budget = self.timeout if timeout is None else timeout
        if getattr(self._transport, "pipelines", False):
            return await self._transport.request_many(framed, budget, False)  # type: ignore[no-any-return]
        out: List[Tuple[int, bytes]] = []
        deadline = time.monotonic() + budget
        for method, path, body, h in framed:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SelectServiceTimeout(None, f"timed out after {budget} s", method=method, path=path)
            out.append(await self._transport.request(method, path, body, h, left, False))
        return out

    async def request_json(self, method: str, path: str, body: Body = None, **kwargs: Any) -> Any:
        """:meth:`request`, the answer decoded as JSON (an error when it is not JSON)."""
        status, raw = await self.request(method, path, body, **kwargs)
        try:
            return json.loads(raw)
        except ValueError as err:
            raise SelectServiceError(status, f"response is not JSON: {err}", body=raw.decode("utf-8", "replace"),
                                     method=method, path=path) from err

    async def _typed(self, cls: Type[W], method: str, path: str, body: Body = None, **kwargs: Any) -> W:
        return _parse(cls.from_wire, await self.request_json(method, path, body, **kwargs), method, path)

    # ---- workers -----------------------------------------------------------------------------

    async def upsert_worker(self, worker: Union[WorkerRequest, Mapping[str, Any], None] = None, *,
                            timeout: Optional[float] = None, **fields: Any) -> WorkerRecord:
        """``POST /workers``: registers or replaces a worker (send the whole record)."""
        return await self._typed(WorkerRecord, "POST", "/workers", _body(WorkerRequest, worker, fields),
                                 timeout=timeout, idempotent=True)

    async def delete_worker(self, worker_id: int, *, timeout: Optional[float] = None) -> WorkerRecord:
        """``DELETE /workers/{worker_id}`` (404 for an unknown worker)."""
        return await self._typed(WorkerRecord, "DELETE", f"/workers/{_segment(worker_id)}", timeout=timeout,
                                 idempotent=True)

    async def list_workers(self, model_name: Optional[str] = None, routing_group: Optional[str] = None, *,
                           timeout: Optional[float] = None) -> List[WorkerRecord]:
        """``GET /workers``, sorted by (model_name, routing_group, worker_id)."""
        path = "/workers" + _query(model_name, routing_group)
        doc = await self.request_json("GET", path, timeout=timeout, idempotent=True)
        return [_parse(WorkerRecord.from_wire, item, "GET", path) for item in doc]

    # ---- selection and reservations ------------------------------------------------------------

    async def select_and_reserve(self, request: Union[SelectAndReserveRequest, Mapping[str, Any], None] = None, *,
                                 policy_class: Optional[str] = None, timeout: Optional[float] = None,
                                 **fields: Any) -> BookingResponse:
        """``POST /select_and_reserve``: chooses and books atomically (409 for a live ``selection_id``)."""
        headers = {POLICY_CLASS_HEADER: policy_class} if policy_class is not None else None
        return await self._typed(BookingResponse, "POST", "/select_and_reserve",
                                 _body(SelectAndReserveRequest, request, fields), headers=headers, timeout=timeout)

    async def create_reservation(self, request: Union[ReservationRequest, Mapping[str, Any], None] = None, *,
                                 timeout: Optional[float] = None, **fields: Any) -> ReservationResponse:
        """``POST /reservations`` (replay or explicit form; see :class:`ReservationRequest`)."""
        return await self._typed(ReservationResponse, "POST", "/reservations",
                                 _body(ReservationRequest, request, fields), timeout=timeout)

    async def prefill_complete(self, reservation_id: str, *, timeout: Optional[float] = None) -> None:
        """``POST /reservations/{id}/prefill_complete`` (idempotent on a live booking)."""
        await self.request("POST", f"/reservations/{_segment(reservation_id)}/prefill_complete", timeout=timeout,
                           idempotent=True)

    async def output_block(self, reservation_id: str, decay_fraction: Optional[float] = None, *,
                           timeout: Optional[float] = None) -> None:
        """``POST /reservations/{id}/output_block``: one more output block."""
        body: Dict[str, Any] = {} if decay_fraction is None else {"decay_fraction": decay_fraction}
        await self.request("POST", f"/reservations/{_segment(reservation_id)}/output_block", body, timeout=timeout)

    async def free_reservation(self, reservation_id: str, *, timeout: Optional[float] = None,
                               missing_ok: bool = False) -> None:
        """``DELETE /reservations/{id}`` (a second DELETE is a 404; ``missing_ok`` takes it as done)."""
        await self.request("DELETE", self.reservation_path(reservation_id), timeout=timeout, idempotent=True,
                           ok=(200, 404) if missing_ok else (200, 201))

    @staticmethod
    def reservation_path(reservation_id: str) -> str:
        """``/reservations/{id}``, the id escaped (for :meth:`send_in_order`)."""
        return f"/reservations/{_segment(reservation_id)}"

    async def loads(self, model_name: Optional[str] = None, routing_group: Optional[str] = None, *,
                    timeout: Optional[float] = None) -> List[ModelLoad]:
        """``GET /loads``: active load per partition and worker rank."""
        path = "/loads" + _query(model_name, routing_group)
        doc = await self.request_json("GET", path, timeout=timeout, idempotent=True)
        return [_parse(ModelLoad.from_wire, item, "GET", path) for item in doc]
