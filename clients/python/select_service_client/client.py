"""The HTTP client: one method per route of the selection API."""
from __future__ import annotations

import json
import ssl
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Type, TypeVar, Union
from urllib.parse import quote, urlencode

from ._transport import Transport
from ._wire import Wire, encode
from .booking import Booking
from .errors import SelectServiceError
from .types import (
    DumpPartition, ModelLoad, OverlapScores, PotentialLoad, PromptQuery, ReadyResponse, ReservationRequest,
    BookingResponse, ReservationResponse, SelectAndReserveRequest, SelectRequest, SelectResponse, WorkerPatch, WorkerRecord,
    WorkerRequest,
)
from .version import __version__

W = TypeVar("W", bound=Wire)
T = TypeVar("T")
Body = Union[Wire, Mapping[str, Any], None]

#: Header that names the policy class (queue) of a ``/select`` or ``/select_and_reserve``.
POLICY_CLASS_HEADER = "x-dynamo-meta-policy-class"

DEFAULT_TIMEOUT = 10.0


def _body(cls: Type[W], request: Union[W, Mapping[str, Any], None], fields: Dict[str, Any]) -> W:
    """A request object from either an instance (or a plain dict) or keyword fields, not both."""
    if request is not None and fields:
        raise TypeError(f"pass a {cls.__name__} or keyword fields, not both")
    if request is None:
        return cls(**fields)
    if isinstance(request, cls):
        return request
    if isinstance(request, Mapping):
        return cls.from_dict(dict(request))
    raise TypeError(f"expected a {cls.__name__} or a dict, got {type(request).__name__}")


def _query(model_name: Optional[str], routing_group: Optional[str]) -> str:
    q = {k: v for k, v in (("model_name", model_name), ("routing_group", routing_group)) if v is not None}
    return f"?{urlencode(q)}" if q else ""


def _segment(value: Union[str, int]) -> str:
    return quote(str(value), safe="")


class SelectServiceClient:
    """A client of one selection service.

    Args:
        base_url: ``http://host:port`` (``https://`` uses TLS; a path is a prefix of every route).
        timeout: default seconds per call (connect and each wait for data); every method also takes
            ``timeout=``. A ``/select`` that queues in the router waits until it is admitted, so give
            selections a timeout longer than the expected queueing.
        token: sent as ``Authorization: Bearer <token>`` on every request.
        headers: more headers for every request.
        ssl_context: for https, e.g. ``ssl.create_default_context(cafile=...)``.

    One keep-alive connection is reused for every call. A connection the server closed while idle
    is noticed before the next request and replaced; a reused connection that fails before any
    answer is retried once on a new one for idempotent calls (reads, upserts, PATCH, DELETE,
    ``prefill_complete`` and the read-only POSTs), never for bookings or ``output_block``.

    Thread safety: calls are serialized on the one connection by a lock, so a client may be shared,
    but threads then wait for each other; give each thread its own client for parallel calls.

    Errors: every failure raises :class:`SelectServiceError` (``.status``, ``.error``, ``.details``,
    ``.body``); no answer at all raises its subclass ``SelectServiceConnectionError``
    (``SelectServiceTimeout`` for a timeout).
    """

    def __init__(self, base_url: str, *, timeout: float = DEFAULT_TIMEOUT, token: Optional[str] = None,
                 headers: Optional[Mapping[str, str]] = None, ssl_context: Optional[ssl.SSLContext] = None) -> None:
        base = {"Accept": "application/json", "User-Agent": f"select-service-client-python/{__version__}"}
        if token is not None:
            base["Authorization"] = f"Bearer {token}"
        base.update(headers or {})
        self.timeout = timeout
        self._transport = Transport(base_url, base, ssl_context)

    # ---- plumbing ----------------------------------------------------------------------------

    @property
    def connections_opened(self) -> int:
        """How many TCP connections this client has opened (1 while keep-alive holds)."""
        return self._transport.connections_opened

    def close(self) -> None:
        """Closes the kept connection (the next call opens a new one)."""
        self._transport.close()

    def __enter__(self) -> "SelectServiceClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(self, method: str, path: str, body: Body = None, *, headers: Optional[Mapping[str, str]] = None,
                timeout: Optional[float] = None, idempotent: bool = False, ok: Tuple[int, ...] = (200, 201)) -> Tuple[int, bytes]:
        """Sends a request to ``path`` (JSON body when given) and returns ``(status, raw body)``.

        A status outside ``ok`` raises :class:`SelectServiceError`.
        """
        h = dict(headers or {})
        data: Optional[bytes] = None
        if body is not None:
            payload = body.to_dict() if isinstance(body, Wire) else encode(dict(body))
            data = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("utf-8")
            h["Content-Type"] = "application/json"
        status, raw = self._transport.request(method, path, data, h, self.timeout if timeout is None else timeout,
                                              idempotent)
        if status not in ok:
            raise SelectServiceError.from_response(status, raw, method, path)
        return status, raw

    def _json(self, method: str, path: str, body: Body = None, **kwargs: Any) -> Any:
        status, raw = self.request(method, path, body, **kwargs)
        try:
            return json.loads(raw.decode("utf-8"))
        except ValueError as err:
            raise SelectServiceError(status, f"response is not JSON: {err}", body=raw.decode("utf-8", "replace"),
                                     method=method, path=path) from err

    def _typed(self, cls: Type[W], method: str, path: str, body: Body = None, **kwargs: Any) -> W:
        doc = self._json(method, path, body, **kwargs)
        return self._parse(cls.from_wire, doc, method, path)

    def _typed_list(self, cls: Type[W], method: str, path: str, body: Body = None, **kwargs: Any) -> List[W]:
        doc = self._json(method, path, body, **kwargs)
        if not isinstance(doc, list):
            raise SelectServiceError(200, f"expected a JSON array from {path}", body=json.dumps(doc), method=method, path=path)
        return [self._parse(cls.from_wire, item, method, path) for item in doc]

    @staticmethod
    def _parse(decode: Callable[[Any], T], doc: Any, method: str, path: str) -> T:
        try:
            return decode(doc)
        except ValueError as err:
            raise SelectServiceError(200, f"unexpected response: {err}", body=json.dumps(doc), method=method,
                                     path=path) from err

    @staticmethod
    def _select_headers(policy_class: Optional[str]) -> Dict[str, str]:
        return {POLICY_CLASS_HEADER: policy_class} if policy_class is not None else {}

    # ---- workers -----------------------------------------------------------------------------

    def upsert_worker(self, worker: Union[WorkerRequest, Mapping[str, Any], None] = None, *,
                      timeout: Optional[float] = None, **fields: Any) -> WorkerRecord:
        """``POST /workers``: registers or replaces a worker (send the whole record); 201."""
        body = _body(WorkerRequest, worker, fields)
        return self._typed(WorkerRecord, "POST", "/workers", body, timeout=timeout, idempotent=True)

    def patch_worker(self, worker_id: int, patch: Union[WorkerPatch, Mapping[str, Any], None] = None, *,
                     timeout: Optional[float] = None, **fields: Any) -> WorkerRecord:
        """``PATCH /workers/{worker_id}``: changes the given fields (404 for an unknown worker)."""
        body = _body(WorkerPatch, patch, fields)
        return self._typed(WorkerRecord, "PATCH", f"/workers/{_segment(worker_id)}", body, timeout=timeout,
                           idempotent=True)

    def delete_worker(self, worker_id: int, *, timeout: Optional[float] = None) -> WorkerRecord:
        """``DELETE /workers/{worker_id}``: removes the worker (its bookings are released)."""
        return self._typed(WorkerRecord, "DELETE", f"/workers/{_segment(worker_id)}", timeout=timeout, idempotent=True)

    def list_workers(self, model_name: Optional[str] = None, routing_group: Optional[str] = None, *,
                     timeout: Optional[float] = None) -> List[WorkerRecord]:
        """``GET /workers``, sorted by (model_name, routing_group, worker_id)."""
        return self._typed_list(WorkerRecord, "GET", "/workers" + _query(model_name, routing_group), timeout=timeout,
                                idempotent=True)

    # ---- health --------------------------------------------------------------------------------

    def health(self, *, timeout: Optional[float] = None) -> str:
        """``GET /health``: the ``status`` text (``"ok"``) while the process is alive."""
        return str(self._json("GET", "/health", timeout=timeout, idempotent=True).get("status"))

    def ready(self, *, timeout: Optional[float] = None) -> ReadyResponse:
        """``GET /ready``: the readiness body, whether the service answered 200 or 503."""
        return self._typed(ReadyResponse, "GET", "/ready", timeout=timeout, idempotent=True, ok=(200, 503))

    # ---- selection -----------------------------------------------------------------------------

    def select(self, request: Union[SelectRequest, Mapping[str, Any], None] = None, *, policy_class: Optional[str] = None,
               timeout: Optional[float] = None, **fields: Any) -> SelectResponse:
        """``POST /select``: chooses a worker without booking. With a ``selection_id`` the choice is
        cached, for :meth:`create_reservation` in its replay form."""
        body = _body(SelectRequest, request, fields)
        return self._typed(SelectResponse, "POST", "/select", body, headers=self._select_headers(policy_class),
                           timeout=timeout, idempotent=True)

    def select_and_reserve(self, request: Union[SelectAndReserveRequest, Mapping[str, Any], None] = None, *,
                           policy_class: Optional[str] = None, timeout: Optional[float] = None,
                           **fields: Any) -> BookingResponse:
        """``POST /select_and_reserve``: chooses and books atomically (409 for a live ``selection_id``)."""
        body = _body(SelectAndReserveRequest, request, fields)
        return self._typed(BookingResponse, "POST", "/select_and_reserve", body,
                           headers=self._select_headers(policy_class), timeout=timeout)

    # ---- reservations --------------------------------------------------------------------------

    def create_reservation(self, request: Union[ReservationRequest, Mapping[str, Any], None] = None, *,
                           timeout: Optional[float] = None, **fields: Any) -> ReservationResponse:
        """``POST /reservations`` (201): the replay form (only ``selection_id`` and the partition:
        404 when the service no longer holds that selection) or the explicit form (``worker_id``,
        ``dp_rank`` and the prompt). See :meth:`ReservationRequest.replay` and
        :meth:`ReservationRequest.explicit`."""
        body = _body(ReservationRequest, request, fields)
        return self._typed(ReservationResponse, "POST", "/reservations", body, timeout=timeout)

    def prefill_complete(self, reservation_id: str, *, timeout: Optional[float] = None) -> None:
        """``POST /reservations/{id}/prefill_complete`` (idempotent on a live booking)."""
        self._json("POST", f"/reservations/{_segment(reservation_id)}/prefill_complete", timeout=timeout,
                   idempotent=True)

    def output_block(self, reservation_id: str, decay_fraction: Optional[float] = None, *,
                     timeout: Optional[float] = None) -> None:
        """``POST /reservations/{id}/output_block``: one more output block (the body is always a JSON
        object; ``decay_fraction`` in [0, 1] when given)."""
        body: Dict[str, Any] = {} if decay_fraction is None else {"decay_fraction": decay_fraction}
        self._json("POST", f"/reservations/{_segment(reservation_id)}/output_block", body, timeout=timeout)

    def free_reservation(self, reservation_id: str, *, timeout: Optional[float] = None) -> None:
        """``DELETE /reservations/{id}``: frees the booking (a second DELETE is a 404)."""
        self._json("DELETE", f"/reservations/{_segment(reservation_id)}", timeout=timeout, idempotent=True)

    def booking(self, request: Union[SelectRequest, Mapping[str, Any], None] = None, *,
                policy_class: Optional[str] = None, timeout: Optional[float] = None, **fields: Any) -> Booking:
        """A :class:`Booking` of the two-step flow: ``/select`` now, :meth:`Booking.reserve` once the
        request has gone to the worker (replay form, explicit form on 404), freed on exit."""
        return Booking(self, _body(SelectRequest, request, fields), policy_class=policy_class, atomic=False,
                       timeout=timeout)

    def reserved_booking(self, request: Union[SelectAndReserveRequest, Mapping[str, Any], None] = None, *,
                         policy_class: Optional[str] = None, timeout: Optional[float] = None,
                         **fields: Any) -> Booking:
        """A :class:`Booking` made with ``/select_and_reserve`` (booked on entry), freed on exit."""
        return Booking(self, _body(SelectAndReserveRequest, request, fields), policy_class=policy_class, atomic=True,
                       timeout=timeout)

    # ---- loads and overlap ---------------------------------------------------------------------

    def loads(self, model_name: Optional[str] = None, routing_group: Optional[str] = None, *,
              timeout: Optional[float] = None) -> List[ModelLoad]:
        """``GET /loads``: active load per partition and worker rank."""
        return self._typed_list(ModelLoad, "GET", "/loads" + _query(model_name, routing_group), timeout=timeout,
                                idempotent=True)

    def potential_loads(self, request: Union[PromptQuery, Mapping[str, Any], None] = None, *,
                        timeout: Optional[float] = None, **fields: Any) -> List[PotentialLoad]:
        """``POST /potential_loads``: the load of every worker rank if this prompt were added."""
        body = _body(PromptQuery, request, fields)
        return self._typed_list(PotentialLoad, "POST", "/potential_loads", body, timeout=timeout, idempotent=True)

    def overlap_scores(self, request: Union[PromptQuery, Mapping[str, Any], None] = None, *,
                       timeout: Optional[float] = None, **fields: Any) -> OverlapScores:
        """``POST /overlap_scores``: tiered overlap of the prompt on every schedulable worker rank."""
        body = _body(PromptQuery, request, fields)
        return self._typed(OverlapScores, "POST", "/overlap_scores", body, timeout=timeout, idempotent=True)

    def dump(self, *, timeout: Optional[float] = None) -> Dict[str, DumpPartition]:
        """``GET /dump``: the index as RouterEvents per ``"model:group"`` (u64 hashes)."""
        doc = self._json("GET", "/dump", timeout=timeout, idempotent=True)
        if not isinstance(doc, dict):
            raise SelectServiceError(200, "expected a JSON object from /dump", body=json.dumps(doc), method="GET", path="/dump")
        return {key: self._parse(DumpPartition.from_wire, value, "GET", "/dump") for key, value in doc.items()}

    # ---- replica-sync peers --------------------------------------------------------------------

    def register_peer(self, endpoint: str, *, timeout: Optional[float] = None) -> bool:
        """``POST /replica_sync/register_peer``: True when added (201), False when already known (200)."""
        status, _ = self.request("POST", "/replica_sync/register_peer", {"endpoint": endpoint}, timeout=timeout)
        return status == 201

    def deregister_peer(self, endpoint: str, *, timeout: Optional[float] = None) -> None:
        """``POST /replica_sync/deregister_peer`` (404 when not registered)."""
        self._json("POST", "/replica_sync/deregister_peer", {"endpoint": endpoint}, timeout=timeout)

    def list_peers(self, *, timeout: Optional[float] = None) -> List[str]:
        """``GET /replica_sync/peers``: sorted ZMQ endpoints ([] when replica sync is off)."""
        return list(self._json("GET", "/replica_sync/peers", timeout=timeout, idempotent=True))

    # ---- documents -----------------------------------------------------------------------------

    def metrics(self, *, timeout: Optional[float] = None) -> str:
        """``GET /metrics``: the Prometheus text (a service without the route raises a 404 error)."""
        _, raw = self.request("GET", "/metrics", headers={"Accept": "text/plain"}, timeout=timeout, idempotent=True,
                              ok=(200,))
        return raw.decode("utf-8")

    def openapi(self, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """``GET /openapi.json``: the OpenAPI document of the service."""
        return dict(self._json("GET", "/openapi.json", timeout=timeout, idempotent=True))
