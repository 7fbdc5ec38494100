"""The select-then-reserve flow of a request, as a context manager that always frees its booking."""
from __future__ import annotations

import dataclasses
import logging
import uuid
from typing import TYPE_CHECKING, Any, Optional, Union, cast

from .errors import SelectServiceError
from .types import (
    BookingResponse, ReservationRequest, ReservationResponse, SelectAndReserveRequest, SelectRequest, SelectResponse,
)

if TYPE_CHECKING:  # pragma: no cover
    from .client import SelectServiceClient

log = logging.getLogger("select_service_client")


class Booking:
    """One request's selection and booking (make it with ``client.booking(...)`` or
    ``client.reserved_booking(...)``).

    Two-step flow (``client.booking``)::

        with client.booking(model_name="llama", token_ids=tokens) as b:
            send_to_worker(b.endpoint, ...)     # the caller calls the chosen worker
            b.reserve()                         # POST /reservations {selection_id}; explicit form on 404
            ...first token...
            b.prefill_complete()
            for each token that opens a KV block (prompt plus output): b.output_block()
        # on exit (normal or exception): DELETE /reservations/{id}; a 404 there is ignored

    ``client.reserved_booking(...)`` books on entry with ``/select_and_reserve`` instead.

    The selection always carries a ``selection_id`` (a UUID4 unless the request names one), so the
    replay form can find it. The replay form books from the cache of the replica that served the
    ``/select``; when that replica no longer has it (expired, evicted, or another replica behind a
    load balancer answered), the service says 404 and the booking is made in the explicit form with
    the chosen worker rank and the same prompt fields.

    On exit the booking is freed. If the body raised, a failure of that cleanup is logged (logger
    ``select_service_client``) and the body's exception propagates; otherwise the cleanup's own
    error is raised. Not thread-safe; one booking per request.
    """

    def __init__(self, client: "SelectServiceClient", request: Union[SelectRequest, SelectAndReserveRequest], *,
                 policy_class: Optional[str] = None, atomic: bool = False, timeout: Optional[float] = None) -> None:
        if not request.selection_id:
            request = dataclasses.replace(request, selection_id=str(uuid.uuid4()))
        self.client = client
        self.request = request
        self.policy_class = policy_class
        self.atomic = atomic
        self.timeout = timeout
        self.selection: Optional[Union[SelectResponse, BookingResponse]] = None
        self.reservation: Optional[ReservationResponse] = None
        # "select_and_reserve", "replay" or "explicit" once booked
        self.reserved_by: Optional[str] = None
        self.freed = False

    # ---- what was chosen -------------------------------------------------------------------------

    @property
    def selection_id(self) -> str:
        return str(self.request.selection_id)

    def _chosen(self) -> Union[SelectResponse, BookingResponse]:
        if self.selection is None:
            raise RuntimeError("no selection yet: use the booking as a context manager or call start()")
        return self.selection

    @property
    def worker_id(self) -> int:
        return self._chosen().worker_id

    @property
    def dp_rank(self) -> int:
        return self._chosen().dp_rank

    @property
    def endpoint(self) -> str:
        """The chosen worker's HTTP endpoint, where the caller sends the request."""
        return self._chosen().endpoint

    @property
    def reserved(self) -> bool:
        return self.reserved_by is not None and not self.freed

    # ---- the flow ----------------------------------------------------------------------------------

    def start(self) -> "Booking":
        """Selects (``/select``), or selects and books (``/select_and_reserve``)."""
        if self.selection is not None:
            raise RuntimeError("this booking has already selected")
        if self.atomic:
            self.selection = self.client.select_and_reserve(self.request, policy_class=self.policy_class,
                                                            timeout=self.timeout)
            self.reserved_by = "select_and_reserve"
        else:
            self.selection = self.client.select(cast(SelectRequest, self.request), policy_class=self.policy_class,
                                                timeout=self.timeout)
        return self

    def reserve(self) -> ReservationResponse:
        """Books the selection: the replay form, then the explicit form if the replay answers 404."""
        selection = self._chosen()
        if self.reserved_by is not None:
            raise RuntimeError(f"already booked ({self.reserved_by})")
        try:
            self.reservation = self.client.create_reservation(
                ReservationRequest.replay(self.selection_id, selection.model_name, selection.routing_group),
                timeout=self.timeout)
            self.reserved_by = "replay"
        except SelectServiceError as err:
            if err.status != 404:
                raise
            self.reservation = self.client.create_reservation(
                ReservationRequest.explicit(self.request, selection, self.selection_id), timeout=self.timeout)
            self.reserved_by = "explicit"
        return self.reservation

    def _booked(self) -> str:
        if not self.reserved:
            raise RuntimeError("not booked: call reserve() first" if not self.freed else "already freed")
        return self.selection_id

    def prefill_complete(self) -> None:
        """The worker produced its first token: prefill load drops, decode blocks stay."""
        self.client.prefill_complete(self._booked(), timeout=self.timeout)

    def output_block(self, decay_fraction: Optional[float] = None) -> None:
        """One more output block on the booked worker."""
        self.client.output_block(self._booked(), decay_fraction, timeout=self.timeout)

    def free(self) -> bool:
        """Frees the booking; True if this call freed it, False if there was nothing to free (not
        booked, already freed, or the service answered 404)."""
        if not self.reserved:
            return False
        try:
            self.client.free_reservation(self.selection_id, timeout=self.timeout)
        except SelectServiceError as err:
            if err.status != 404:
                raise  # not known to be freed: free() may be called again
            self.freed = True
            return False
        self.freed = True
        return True

    # ---- context manager -------------------------------------------------------------------------

    def __enter__(self) -> "Booking":
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.free()
            return
        try:
            self.free()
        except Exception as cleanup:  # the body's exception is the one to report
            log.warning("could not free reservation %s after %s: %s", self.selection_id, exc_type.__name__, cleanup)
