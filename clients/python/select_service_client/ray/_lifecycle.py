"""What happens to a booking after the choice (internal): moves, frees, the TTL backstop, and
recovery after an outage. A mixin of ``SelectServiceRouter`` (router.py keeps Serve's API)."""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, List, Optional, Set

from ..errors import SelectServiceConnectionError, SelectServiceError
from ._bookings import Booking

log = logging.getLogger("ray.serve.select_service")

_FREE_DELAY_S = 0.002


class BookingLifecycle:
    """Needs from the router: settings, _client, _bookings, _availability, _registry, counters,
    _m_expired, _partition, _dp_rank, _unfreed, _to_free, _sweeper, _event_loop, _tasks."""

    settings: Any
    _client: Any
    _bookings: Any
    _availability: Any
    _registry: Any
    counters: Any
    _m_expired: Any
    _partition: Any
    _dp_rank: Any
    _unfreed: Set[str]
    _to_free: List[Booking]
    _tasks: Set["asyncio.Task[Any]"]
    _event_loop: asyncio.AbstractEventLoop

    def _free_soon(self, booking: Booking) -> None:
        """Frees in batches, a moment later: the next request's booking (often just sent) then does
        not queue behind this DELETE in the service, and one task sends a burst of frees."""
        self._to_free.append(booking)
        if len(self._to_free) == 1:
            self._event_loop.call_later(_FREE_DELAY_S, lambda: self._spawn(self._flush_frees()))

    async def _flush_frees(self) -> None:
        batch, self._to_free = self._to_free, []
        for booking in batch:
            await self._delete(booking.selection_id, booking)

    async def _move(self, booking: Booking) -> None:
        async with booking.lock:
            target = booking.wanted
            if not booking.live or target is None or target == booking.worker_id:
                return
            sid = booking.selection_id
            body = {**self._partition, "selection_id": sid, "worker_id": target, "dp_rank": self._dp_rank.get(target, 0),
                    **booking.prompt}
            try:
                await self._client.free_reservation(sid, timeout=self.settings.control_timeout_s, missing_ok=True)
                await self._client.request("POST", "/reservations", body, timeout=self.settings.control_timeout_s)
            except SelectServiceError as err:
                self._bookings.remove(booking)
                self._lost(sid, err)
                return
            booking.worker_id = target
            self.counters["moves"] += 1

    def _free(self, booking: Booking) -> None:
        self._bookings.remove(booking)
        self._spawn(self._delete(booking.selection_id, booking))

    async def _delete(self, sid: str, booking: Optional[Booking] = None) -> None:
        lock = booking.lock if booking is not None else None
        try:
            if lock is not None:
                await lock.acquire()
            await self._client.free_reservation(sid, timeout=self.settings.control_timeout_s, missing_ok=True)
            self.counters["freed"] += 1
        except SelectServiceError as err:
            self._lost(sid, err)
        finally:
            if lock is not None:
                lock.release()

    def _lost(self, sid: str, err: SelectServiceError) -> None:
        if isinstance(err, SelectServiceConnectionError):
            self._availability.failed(err)
            if len(self._unfreed) < 100_000:
                self._unfreed.add(sid)  # freed when the service answers again
        else:
            self._availability.rejected(err.status, f"{err.method} {err.path}: {err.error}")

    async def _free_late(self, sid: str) -> None:
        await asyncio.sleep(self.settings.retry_after_s)
        await self._delete(sid)

    def _answered(self) -> None:
        if self._availability.answered():
            self._recovered()

    def _recovered(self) -> None:
        self._registry.resync()
        unfreed, self._unfreed = self._unfreed, set()
        for sid in unfreed:
            self._spawn(self._delete(sid))

    # ---- TTL backstop ------------------------------------------------------------------------------

    def _sweep(self, now: float) -> None:
        expired = self._bookings.expired(self.settings.booking_ttl_s, now)
        if not expired:
            return
        self.counters["expired"] += len(expired)
        self._m_expired.inc(len(expired))
        log.warning("select-service: freeing %d booking(s) older than %.0f s whose completion never came (e.g. %s)",
                    len(expired), self.settings.booking_ttl_s, expired[0].selection_id)
        for booking in expired:
            self._spawn(self._delete(booking.selection_id, booking))

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(min(self.settings.booking_ttl_s / 2, 30.0))
            self._sweep(time.monotonic())

    def _spawn(self, coro: Any) -> "asyncio.Task[Any]":
        task = self._event_loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
