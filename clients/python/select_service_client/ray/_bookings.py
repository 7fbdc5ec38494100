"""The router's bookings: which request holds which reservation on which worker (internal).

Serve tells a router that a request finished with only ``(replica_id, internal_request_id)``
(``RequestRouter.on_request_completed``), so bookings are found by that id. One id can hold
several bookings: the calls one parent request makes to the same deployment share Serve's
``internal_request_id`` (``get_request_metadata`` in python/ray/serve/_private/default_impl.py),
so the second is booked as ``<id>#2``.

A request Serve sends more than once (a replica rejected it, ``_route_and_send_request_once`` in
python/ray/serve/_private/router.py) gets one completion per send, the rejected ones included;
``attempts`` counts sends per replica so that only the last completion on the replica that holds
the booking frees it.
"""
from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass(eq=False)
class Booking:
    """One reservation in the service, for one request."""

    selection_id: str
    internal_request_id: str
    worker_id: int
    """The worker the reservation is on now (a move changes it)."""
    prompt: Dict[str, Any]
    """The prompt fields of the selection, for an explicit ``POST /reservations`` when it moves."""
    created_at: float = field(default_factory=time.monotonic)
    replica_id: Any = None
    """The replica Serve handed the request to last (``ReplicaID``), or None before that."""
    attempts: Dict[Any, int] = field(default_factory=dict)
    live: bool = True
    wanted: Optional[int] = None
    """The worker the booking should be on (the replica Serve handed the request to)."""
    routing: bool = False
    """The router is choosing a replica for it (its first send, or a retry after a rejection): the
    completion of a rejected send that arrives meanwhile does not free it (the retry's send will)."""
    _lock: Optional[asyncio.Lock] = None

    @property
    def lock(self) -> asyncio.Lock:
        """Serializes this booking's calls (a move's DELETE + POST, then the free)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def sent_to(self, replica_id: Any) -> None:
        self.attempts[replica_id] = self.attempts.get(replica_id, 0) + 1
        self.replica_id = replica_id

    def completed_on(self, replica_id: Any) -> bool:
        """One send on ``replica_id`` finished; True when the booking is now to be freed."""
        if not self.attempts:  # routed without our pick (Serve's fast path): the first completion frees
            return self.replica_id is None or self.replica_id == replica_id
        left = self.attempts.get(replica_id)
        if left is None:
            return False
        self.attempts[replica_id] = left - 1
        return replica_id == self.replica_id and left - 1 <= 0 and not self.routing


class BookingTable:
    """Live bookings by selection id (oldest first, for the TTL) and by internal request id."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._by_selection: "OrderedDict[str, Booking]" = OrderedDict()
        self._by_request: Dict[str, List[Booking]] = {}

    def __len__(self) -> int:
        return len(self._by_selection)

    def new_selection_id(self, internal_request_id: str) -> str:
        """``<prefix><id>``, or ``<prefix><id>#n`` while earlier calls of the same id are booked."""
        base = self.prefix + internal_request_id
        if base not in self._by_selection:
            return base
        n = 2
        while f"{base}#{n}" in self._by_selection:
            n += 1
        return f"{base}#{n}"

    def add(self, booking: Booking) -> None:
        self._by_selection[booking.selection_id] = booking
        self._by_request.setdefault(booking.internal_request_id, []).append(booking)

    def remove(self, booking: Booking) -> None:
        """Marks the booking freed and forgets it (idempotent)."""
        booking.live = False
        if self._by_selection.pop(booking.selection_id, None) is None:
            return
        siblings = self._by_request.get(booking.internal_request_id)
        if siblings is not None:
            siblings.remove(booking)
            if not siblings:
                del self._by_request[booking.internal_request_id]

    def completed(self, replica_id: Any, internal_request_id: str) -> Optional[Booking]:
        """The booking a completion on ``replica_id`` frees, if any (it is removed here)."""
        for booking in self._by_request.get(internal_request_id, ()):
            if booking.replica_id == replica_id or replica_id in booking.attempts or booking.replica_id is None:
                if booking.completed_on(replica_id):
                    self.remove(booking)
                    return booking
                return None
        return None

    def on_worker(self, worker_id: int) -> List[Booking]:
        return [b for b in self._by_selection.values() if b.worker_id == worker_id]

    def expired(self, ttl_s: float, now: Optional[float] = None) -> List[Booking]:
        """Removes and returns the bookings older than ``ttl_s`` (their completion never came)."""
        cutoff = (time.monotonic() if now is None else now) - ttl_s
        out: List[Booking] = []
        while self._by_selection:
            booking = next(iter(self._by_selection.values()))
            if booking.created_at > cutoff:
                break
            self.remove(booking)
            out.append(booking)
        return out
