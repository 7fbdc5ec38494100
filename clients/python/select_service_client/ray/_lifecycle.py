"""What happens to a booking after the choice (internal): moves, frees, the TTL backstop, and
recovery after an outage. A mixin of ``SelectServiceRouter`` (router.py keeps Serve's API)."""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from ..errors import SelectServiceConnectionError, SelectServiceError
from ._bookings import Booking

log = logging.getLogger("ray.serve.select_service")

_FREE_DELAY_S = 0.002


class BookingLifecycle:
    """Needs from the router: settings, _client, _bookings, _availability, _registry, counters,
    _m_expired, _partition, _dp_rank, _unfreed, _to_free, _late, _freeing, _frees_out, _sweeper, _event_loop, _tasks."""

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
    _late: Dict[str, asyncio.TimerHandle]
    _freeing: Dict[str, "asyncio.Future[None]"]
    _frees_out: Set["asyncio.Future[None]"]
    _tasks: Set["asyncio.Task[Any]"]
    _event_loop: asyncio.AbstractEventLoop

    def _free_soon(self, booking: Booking) -> None:
        """Frees a finished request's booking: its DELETE goes in front of the next selection (one
        write, and the service frees before it selects: a back-to-back repeat of the prompt finds
        its replica idle again), or after ``_FREE_DELAY_S`` when no selection comes; the frees of a
        burst go out together."""
        self._to_free.append(booking)
        if len(self._to_free) == 1:
            self._event_loop.call_later(_FREE_DELAY_S, self._flush_frees)

    def _flush_frees(self) -> None:
        if self._to_free:
            self._spawn_frees(self._take_frees())

    def _take_frees(self) -> List[str]:
        """The selection ids of the frees decided and not sent yet (a booking that is moving is
        freed after its move, by its own task)."""
        batch, self._to_free = self._to_free, []
        sids: List[str] = []
        for booking in batch:
            if booking._lock is not None and booking._lock.locked():
                self._spawn_delete(booking.selection_id, booking)
            else:
                sids.append(booking.selection_id)
        return sids

    # ---- frees in flight, by selection id: a new selection of the same id waits for them -----------

    def _track_frees(self, sids: List[str]) -> "asyncio.Future[None]":
        """Marks the frees of ``sids`` as sent and not answered yet; done with :meth:`_untrack_frees`."""
        fut: "asyncio.Future[None]" = self._event_loop.create_future()
        for sid in sids:
            self._freeing[sid] = fut
        return fut

    def _untrack_frees(self, sids: List[str], fut: "asyncio.Future[None]") -> None:
        for sid in sids:
            if self._freeing.get(sid) is fut:
                del self._freeing[sid]
        if not fut.done():
            fut.set_result(None)

    async def _after_free_of(self, sid: str, deadline: float) -> None:
        """Waits (until ``deadline`` at most) for a free of ``sid`` sent on another connection or
        waiting for a move of the booking: a retry of a request books the same id again, and must
        not reach the service before that free (409)."""
        fut = self._freeing.get(sid)
        if fut is not None:
            self.counters["waited_for_own_free"] += 1
            await asyncio.wait({fut}, timeout=max(deadline - time.monotonic(), 0.0))

    async def _after_frees_out(self, deadline: float) -> None:
        """Waits for the frees sent on their own connection and not answered yet (``_FREE_DELAY_S``
        passed with no selection to carry them; a late free): they were decided before this
        selection, which must not overtake them on another connection (a replica the service still
        counts busy would lose a back-to-back repeat of its prompt). For half the time left at most:
        a slow free costs the selection some accuracy, never its answer."""
        self.counters["waited_for_frees"] += 1
        await asyncio.wait(set(self._frees_out), timeout=max((deadline - time.monotonic()) / 2, 0.0))

    def _spawn_frees(self, sids: List[str]) -> None:
        fut = self._track_frees(sids)
        self._frees_out.add(fut)
        fut.add_done_callback(self._frees_out.discard)
        self._spawn(self._send_frees(sids)).add_done_callback(lambda _: self._untrack_frees(sids, fut))

    def _spawn_delete(self, sid: str, booking: Optional[Booking] = None) -> None:
        fut = self._track_frees([sid])
        self._spawn(self._delete(sid, booking)).add_done_callback(lambda _: self._untrack_frees([sid], fut))

    async def _send_frees(self, sids: List[str]) -> None:
        try:
            answers = await self._client.send_in_order([("DELETE", self._client.reservation_path(sid), None)
                                                        for sid in sids], timeout=self.settings.control_timeout_s)
        except SelectServiceError as err:
            self._lost_all(sids, err)
            return
        self._freed(sids, answers)

    def _freed(self, sids: List[str], answers: List[Tuple[int, bytes]]) -> None:
        """The answers to DELETEs sent in front of a selection or in a batch (a 404: already gone)."""
        for sid, (status, raw) in zip(sids, answers):
            if status in (200, 404):
                self.counters["freed"] += 1
            else:
                self._lost(sid, SelectServiceError.from_response(status, raw, "DELETE", self._client.reservation_path(sid)))

    def _lost_all(self, sids: List[str], err: SelectServiceError) -> None:
        for sid in sids:
            self._lost(sid, err)

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
        self._free_soon(booking)

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

    def _free_late(self, sid: str) -> None:
        """Frees a selection that got no answer, ``retry_after_s`` later (the service may still book
        it after our deadline), or in front of a new selection of the same id (a retry of the request)."""
        def due() -> None:
            if self._late.pop(sid, None) is not None:
                self._spawn_frees([sid])
        self._late[sid] = self._event_loop.call_later(self.settings.retry_after_s, due)

    def _late_free_of(self, sid: str) -> List[str]:
        """``[sid]`` when a free of this id is still to be sent (it then goes in front of the
        selection that reuses the id), else ``[]``."""
        timer = self._late.pop(sid, None)
        if timer is None:
            return []
        timer.cancel()
        return [sid]

    def _answered(self) -> None:
        if self._availability.answered():
            self._recovered()

    def _recovered(self) -> None:
        self._registry.resync()
        unfreed, self._unfreed = self._unfreed, set()
        for sid in unfreed:
            self._spawn_delete(sid)

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
            self._spawn_delete(booking.selection_id, booking)

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(min(self.settings.booking_ttl_s / 2, 30.0))
            self._sweep(time.monotonic())

    def _spawn(self, coro: Any) -> "asyncio.Task[Any]":
        task = self._event_loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
