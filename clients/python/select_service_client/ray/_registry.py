"""Worker registration (internal): the service's workers follow the deployment's replicas.

``update_replicas`` hands over the records the replicas call for; one background task sends the
difference (``POST /workers`` for new or changed records, ``DELETE /workers/{id}`` for replicas
that left) and runs again while more changes arrive. A failed call is retried after
``retry_after_s``; after an outage every record is sent again, since a restarted service has
forgotten them. Several routers (one per process holding a handle) send the same records: an
upsert of the same record and a second DELETE (404) change nothing.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Dict, Optional, Set

from ..aio import AsyncSelectServiceClient
from ..errors import SelectServiceConnectionError, SelectServiceError
from ._availability import Availability


class WorkerRegistry:
    def __init__(self, client: AsyncSelectServiceClient, availability: Availability, log: logging.Logger,
                 spawn: Callable[[Any], "asyncio.Task[Any]"], timeout_s: float, retry_after_s: float,
                 recovered: Callable[[], None]) -> None:
        self._client = client
        self._availability = availability
        self._log = log
        self._spawn = spawn
        self._timeout_s = timeout_s
        self._retry_after_s = retry_after_s
        self._recovered = recovered
        self._desired: Dict[int, Dict[str, Any]] = {}
        self._sent: Dict[int, Dict[str, Any]] = {}
        self._task: Optional["asyncio.Task[Any]"] = None
        self._dirty = False
        self._warned: Set[Any] = set()
        self._first: Optional[asyncio.Event] = None
        self._resyncing = False
        self.registered = 0
        self.deleted = 0

    @property
    def settled(self) -> bool:
        """True when every wanted record has been sent and nothing is pending."""
        return not self._dirty and self._sent == self._desired and (self._task is None or self._task.done())

    @property
    def ready(self) -> bool:
        """True once the first registration pass has run (whatever its outcome)."""
        return self._first is not None and self._first.is_set()

    async def wait_first(self, timeout_s: float) -> None:
        """Waits (at most ``timeout_s``) for the first pass: a handle's first requests arrive together
        with its first replicas, before they are registered."""
        if self._first is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._first.wait()), timeout_s)
        except asyncio.TimeoutError:
            pass

    def update(self, desired: Dict[int, Dict[str, Any]]) -> None:
        """The records of the current replicas (worker id -> ``POST /workers`` body)."""
        self._desired = desired
        if desired != self._sent:
            self._kick()

    async def sync_now(self, timeout_s: float) -> bool:
        """Sends every record again (unless such a pass is already under way) and waits at most
        ``timeout_s`` for it; True when every record is registered."""
        if not self._resyncing:
            self.resync()
        task = self._task
        if task is not None and not task.done() and timeout_s > 0:
            await asyncio.wait({task}, timeout=timeout_s)
        return self.settled

    def resync(self) -> None:
        """Sends every record again (the service may have restarted and forgotten them)."""
        self._sent = {wid: rec for wid, rec in self._sent.items() if wid not in self._desired}
        self._resyncing = True
        self._kick()

    def _kick(self) -> None:
        if self._first is None:
            self._first = asyncio.Event()
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = self._spawn(self._run())

    async def _run(self) -> None:
        while self._dirty:
            self._dirty = False
            ok = await self._reconcile()
            if self._first is not None:
                self._first.set()
            if ok and not self._dirty:
                self._resyncing = False
            if not ok:
                self._dirty = True
                await asyncio.sleep(self._retry_after_s)

    async def _reconcile(self) -> bool:
        """One pass; False when the service did not answer (the pass is retried)."""
        desired = dict(self._desired)
        try:
            for wid in [w for w in self._sent if w not in desired]:
                await self._delete(wid)
            for wid, record in desired.items():
                if self._sent.get(wid) != record:
                    await self._upsert(wid, record)
        except SelectServiceConnectionError as err:
            self._availability.failed(err)
            return False
        if self._availability.answered():
            self._recovered()
        return True

    async def _delete(self, wid: int) -> None:
        try:
            await self._client.delete_worker(wid, timeout=self._timeout_s)
            self.deleted += 1
            self._log.info("select-service: deleted worker %d (its replica left the deployment)", wid)
        except SelectServiceConnectionError:
            raise
        except SelectServiceError as err:
            if err.status != 404:
                self._warn_once(("delete", wid, err.status), "could not delete worker %d: %s", wid, err)
        self._sent.pop(wid, None)

    async def _upsert(self, wid: int, record: Dict[str, Any]) -> None:
        try:
            stored = await self._client.request_json("POST", "/workers", record, timeout=self._timeout_s,
                                                     idempotent=True)
        except SelectServiceConnectionError:
            raise
        except SelectServiceError as err:
            # a record the service refuses (e.g. an endpoint outside --allowed-endpoints) is not resent
            # until it changes; the replica is then never chosen (allowed_worker_ids has no such worker)
            self._warn_once(("upsert", wid, err.status), "worker %d (%s) was refused: %s", wid, record["endpoint"], err)
            self._sent[wid] = record
            return
        self._sent[wid] = record
        self.registered += 1
        reasons = stored.get("not_schedulable_reasons") or []
        if stored.get("lifecycle") == "incomplete" and reasons:
            self._warn_once(("incomplete", wid, tuple(reasons)),
                            "worker %d (%s) is registered but not schedulable: %s. A replica publishes its KV-event "
                            "endpoint and block size with record_routing_stats() (docs/ray-serve.md); without KV "
                            "events, run the service with DYN_ROUTER_USE_KV_EVENTS=false", wid, record["endpoint"], "; ".join(reasons))

    def _warn_once(self, key: Any, msg: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self._log.warning("select-service: " + msg, *args)
