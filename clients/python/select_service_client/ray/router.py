"""``SelectServiceRouter``: select-service as the request router of a Ray Serve deployment.

    from ray.serve.config import RequestRouterConfig
    from select_service_client.ray import SelectServiceRouter

    @serve.deployment(request_router_config=RequestRouterConfig(
        request_router_class=SelectServiceRouter,
        request_router_kwargs={"select_service_url": "http://select-service:8092"}))

The API is Serve's (python/ray/serve/request_router.py, python/ray/serve/_private/request_router/
request_router.py): ``update_replicas`` registers the replicas as workers, ``choose_replicas``
books each request with one ``POST /select_and_reserve``, ``on_request_routed`` /
``on_request_completed`` move and free the booking. docs/ray-serve.md is the guide.
"""
from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections import Counter, deque
from typing import Any, Deque, Dict, List, Optional, Set, Tuple, Union

from ray.util import metrics
from ray.serve.request_router import PendingRequest, ReplicaID, ReplicaResult, RequestRouter, RunningReplica

from ..aio import AsyncSelectServiceClient
from ..client import POLICY_CLASS_HEADER
from ..errors import SelectServiceConnectionError, SelectServiceError, SelectServiceTimeout
from . import _live
from ._availability import Availability
from ._bookings import Booking, BookingTable
from ._finished import on_delivered
from ._lifecycle import BookingLifecycle
from ._ids import selection_id_for, worker_id_for_replica, worker_record
from ._registry import WorkerRegistry
from ._request import as_token_ids, expected_output_tokens, load_extractor
from ._settings import RouterSettings
from ._timings import Timings

#: Child of Serve's logger ("ray.serve", SERVE_LOGGER_NAME), so its lines go where Serve's go.
log = logging.getLogger("ray.serve.select_service")

_BOOKING = "_select_service_booking"  # the booking rides on its PendingRequest (retries reuse the object)
# The base class's own routing step, used per request by _choose_replica_for_request below.
#: What the service's 503 says when the partition has no worker at all (src/core/errors.ts): a
#: restarted service, before the router registers its replicas again.
_NO_WORKER = "no worker is registered"
_DIRECT_API = ("_select_from_candidate_replicas", "_replicas_updated_event", "_backoff", "_replicas_list")


class SelectServiceRouter(BookingLifecycle, RequestRouter):
    """Routes each request to the replica select-service books for it; see docs/ray-serve.md."""

    def initialize_state(self, **kwargs: Any) -> None:
        dep = self._deployment_id
        self.settings = s = RouterSettings.from_kwargs(kwargs, default_model=dep.name)
        self._client = AsyncSelectServiceClient(s.select_service_url or "", timeout=s.timeout_s, token=s.token,
                                                transport=s.transport)
        where = f"deployment {dep.app_name}/{dep.name}"
        self._availability = Availability(s.select_service_url or "", s.retry_after_s, log, where)
        self._bookings = BookingTable(selection_id_for(dep.app_name, dep.name, ""))
        self._tasks: Set["asyncio.Task[Any]"] = set()
        self._registry = WorkerRegistry(self._client, self._availability, log, self._spawn, s.control_timeout_s,
                                        s.retry_after_s, self._recovered)
        self._worker_ids: Dict[ReplicaID, int] = {}
        self._replica_of: Dict[int, RunningReplica] = {}
        self._dp_rank: Dict[int, int] = {}
        self._extractor = load_extractor(s.token_ids_extractor)
        self._headers = {POLICY_CLASS_HEADER: s.policy_class} if s.policy_class else None
        self._partition = {"model_name": s.model_name, **({"routing_group": s.routing_group} if s.routing_group else {})}
        self._unfreed: Set[str] = set()
        self._to_free: List[Booking] = []
        self._late: Dict[str, asyncio.TimerHandle] = {}
        self._freeing: Dict[str, "asyncio.Future[None]"] = {}
        self._frees_out: Set["asyncio.Future[None]"] = set()
        self._delivered: Deque[Booking] = deque()
        self._early: "Counter[Tuple[ReplicaID, str]]" = Counter()
        self._last_reregister_log = -1e9
        self._sweeper: Optional["asyncio.Task[Any]"] = None
        self._last_resync = 0.0
        self.counters: "Counter[str]" = Counter()
        self._booking_s = 0.0
        self._timings = Timings()
        tags = {"application": dep.app_name, "deployment": dep.name}
        self._m_fallbacks = metrics.Counter(
            "select_service_router_fallbacks", tag_keys=("application", "deployment", "reason"),
            description="Requests routed by Serve's default choice because select-service did not book them")
        self._m_fallbacks.set_default_tags(tags)
        self._m_expired = metrics.Counter(
            "select_service_router_expired_bookings", tag_keys=("application", "deployment"),
            description="Bookings freed by the TTL backstop (their completion never came)")
        self._m_expired.set_default_tags(tags)
        self._m_reregistered = metrics.Counter(
            "select_service_router_reregistrations", tag_keys=("application", "deployment"),
            description="Selections answered 503 'no worker is registered' (a restarted service): the replicas "
                        "were registered again and the selection retried once")
        self._m_reregistered.set_default_tags(tags)
        self._direct = all(hasattr(self, name) for name in _DIRECT_API)
        if not self._direct:  # another Ray version: Serve's own loop, which handles each request's choice too
            log.warning("SelectServiceRouter: this Ray has no %s; using RequestRouter's routing loop", _DIRECT_API)
        _live.add(self)

    # ---- replicas -> workers ---------------------------------------------------------------------

    def update_replicas(self, replicas: List[RunningReplica]) -> None:
        super().update_replicas(replicas)
        s = self.settings
        worker_ids: Dict[ReplicaID, int] = {}
        replica_of: Dict[int, RunningReplica] = {}
        records: Dict[int, Dict[str, Any]] = {}
        for r in replicas:
            wid = self._worker_ids.get(r.replica_id) or worker_id_for_replica(r.replica_id.unique_id)
            worker_ids[r.replica_id] = wid
            replica_of[wid] = r
            records[wid] = worker_record(wid, r.replica_id.to_full_id_str(), r.routing_stats, model_name=s.model_name or "",
                                         routing_group=s.routing_group, block_size=s.block_size)
            self._dp_rank[wid] = int(records[wid].get("data_parallel_start_rank") or 0)
        for wid in set(self._replica_of) - set(replica_of):
            # DELETE /workers releases the worker's bookings in the service; forget ours
            for booking in self._bookings.on_worker(wid):
                self._bookings.remove(booking)
            self._dp_rank.pop(wid, None)
        self._worker_ids, self._replica_of = worker_ids, replica_of
        self._registry.update(records)

    # ---- choosing ----------------------------------------------------------------------------------

    async def choose_replicas(self, candidate_replicas: List[RunningReplica],
                              pending_request: Optional[PendingRequest] = None) -> List[List[RunningReplica]]:
        """The booked replica first, then the other candidates as one fallback rank; Serve's default
        choice (two random candidates) when the request cannot be booked."""
        if pending_request is None or not candidate_replicas:
            return self._default_choice(candidate_replicas)
        booking: Optional[Booking] = getattr(pending_request, _BOOKING, None)
        if booking is not None and booking.live:  # a retry of the same request: no second booking
            booking.routing = self._direct
            return self._ranks(candidate_replicas, booking.wanted)
        t0 = time.perf_counter_ns()
        self._timings.add("hop", int((time.time() - pending_request.created_at) * 1e9))
        ranks = await self._book(candidate_replicas, pending_request)
        self._timings.add("choose", time.perf_counter_ns() - t0)
        return ranks

    async def _book(self, candidates: List[RunningReplica], pr: PendingRequest) -> List[List[RunningReplica]]:
        token_ids = as_token_ids(self._extractor(pr) if self._extractor else pr.kwargs.get(self.settings.token_ids_kwarg))
        if token_ids is None:
            return self._fallback(candidates, "no_token_ids")
        if not self._registry.ready:
            await self._registry.wait_first(self.settings.timeout_s)
        now = time.monotonic()
        self._sweep(now)
        if not self._availability.should_try(now):
            return self._fallback(candidates, "unavailable")
        t0 = time.perf_counter_ns()
        while self._delivered:  # answered requests whose completion Serve has not delivered yet
            self._free_early(self._delivered.popleft())
        t1 = time.perf_counter_ns()
        self._timings.add("answered", t1 - t0)
        iid = pr.metadata.internal_request_id
        sid = self._bookings.new_selection_id(iid)
        prompt: Dict[str, Any] = {"token_ids": token_ids}
        eot = expected_output_tokens(pr.args, pr.kwargs)
        if eot is not None:
            prompt["expected_output_tokens"] = eot
        ids = self._worker_ids
        body = {**self._partition, "selection_id": sid, **prompt,
                "allowed_worker_ids": [ids[r.replica_id] for r in candidates if r.replica_id in ids]}
        if pr.metadata.session_id:
            body["session_id"] = pr.metadata.session_id
        data = json.dumps(body, separators=(",", ":")).encode()  # plain JSON types only: no Wire walk
        self._timings.add("encode", time.perf_counter_ns() - t1)
        answer = await self._select(sid, data, now + self.settings.timeout_s)
        if isinstance(answer, str):
            return self._fallback(candidates, answer)
        wid = int(answer["worker_id"])
        booking = Booking(sid, iid, wid, prompt, wanted=wid, routing=self._direct)
        self._bookings.add(booking)
        self.counters["bookings"] += 1
        setattr(pr, _BOOKING, booking)
        if self._sweeper is None:
            self._sweeper = self._spawn(self._sweep_forever())
        return self._ranks(candidates, wid)

    async def _select(self, sid: str, data: bytes, deadline: float, retried: bool = False) -> Union[Dict[str, Any], str]:
        """One ``POST /select_and_reserve``, behind the frees not sent yet (so the service frees
        before it selects, and a retry of a request finds its previous booking of the same id gone).
        The answer, or the reason to fall back. A 503 saying no worker is registered (the service
        restarted) registers the replicas and tries once more before ``deadline``."""
        if self._frees_out:  # frees already sent on their own: this selection goes out behind them
            await self._after_frees_out(deadline)
        frees = (self._take_frees() if self._to_free else []) + self._late_free_of(sid)
        if sid in frees:  # a retry that frees its previous booking of this id: answered before it books
            self._spawn_frees(frees)
            frees = []
        if sid in self._freeing:  # a retry, whose previous booking's free is out and not answered yet
            await self._after_free_of(sid, deadline)
        calls: List[Tuple[str, str, Optional[bytes]]] = [("DELETE", self._client.reservation_path(f), None) for f in frees]
        calls.append(("POST", "/select_and_reserve", data))
        started = time.perf_counter_ns()
        tracked = self._track_frees(frees) if frees else None
        try:
            answers = await self._client.send_in_order(calls, headers=self._headers,
                                                       timeout=max(deadline - time.monotonic(), 1e-3))
        except SelectServiceConnectionError as err:
            self._availability.failed(err)
            self._lost_all(frees, err)
            self._free_late(sid)  # the service may still book it after our deadline
            return "timeout" if isinstance(err, SelectServiceTimeout) else "unreachable"
        except asyncio.CancelledError:
            if frees:
                self._spawn_frees(frees)  # they may not have been sent (a second DELETE is a 404)
            self._free_late(sid)
            raise
        finally:
            if tracked is not None:
                self._untrack_frees(frees, tracked)
        elapsed = time.perf_counter_ns() - started
        self._timings.add("http", elapsed)
        self._freed(frees, answers[:-1])
        self._answered()
        status, raw = answers[-1]
        if status in (200, 201):
            self._booking_s += elapsed / 1e9
            return json.loads(raw)  # type: ignore[no-any-return]
        err = SelectServiceError.from_response(status, raw, "POST", "/select_and_reserve")
        if status == 503 and _NO_WORKER in err.error and not retried:
            self._m_reregistered.inc()
            self.counters["reregistered"] += 1
            self._warn_reregister(err.error)
            if await self._registry.sync_now(deadline - time.monotonic()) and time.monotonic() < deadline:
                return await self._select(sid, data, deadline, retried=True)
        self._availability.rejected(err.status, err.error)
        now = time.monotonic()
        if status == 503 and now - self._last_resync > self.settings.retry_after_s:
            self._last_resync = now  # no schedulable worker: maybe our workers are not (yet) there
            self._registry.resync()
        return f"status_{status}"

    def _warn_reregister(self, error: str) -> None:
        now = time.monotonic()
        if now - self._last_reregister_log >= 60.0:
            self._last_reregister_log = now
            log.warning("select-service answered 503 (%s): registering the replicas of %s/%s again and retrying the "
                        "selection once (the service restarted?); logged at most once a minute", error,
                        self._deployment_id.app_name, self._deployment_id.name)

    def _ranks(self, candidates: List[RunningReplica], wid: Optional[int]) -> List[List[RunningReplica]]:
        chosen = self._replica_of.get(wid) if wid is not None else None
        if chosen is None:
            return [list(candidates)]
        others = [r for r in candidates if r.replica_id != chosen.replica_id]
        if len(others) == len(candidates):  # the chosen replica is not a candidate (any more)
            return [others]
        return [[chosen], others] if others else [[chosen]]

    def _fallback(self, candidates: List[RunningReplica], reason: str) -> List[List[RunningReplica]]:
        self._availability.fell_back(reason)
        self.counters[f"fallback_{reason}"] += 1
        self._m_fallbacks.inc(tags={"reason": reason})
        return self._default_choice(candidates)

    @staticmethod
    def _default_choice(candidates: List[RunningReplica]) -> List[List[RunningReplica]]:
        """Serve's default: two random candidates, the one with the shorter queue wins
        (PowerOfTwoChoicesRequestRouter, python/ray/serve/_private/request_router/pow_2_router.py)."""
        if len(candidates) <= 2:
            return [list(candidates)] if candidates else []
        return [random.sample(candidates, 2)]

    async def _choose_replica_for_request(self, pending_request: PendingRequest, *, is_retry: bool = False) -> RunningReplica:
        """Routes this request in its own coroutine: its choice, then Serve's queue-length check of
        each rank (``_select_from_candidate_replicas``), with Serve's backoff while all are full.

        The base class instead queues the request for shared routing tasks; a task that finds no
        request of its own keeps looping (a per-request router made the driver grow to 22 GB at 16
        in flight), and FIFOMixin hands a replica chosen for one request to another.
        """
        if not self._direct:
            return await super()._choose_replica_for_request(pending_request, is_retry=is_retry)
        attempt = 0
        try:
            while True:
                while not self._replicas:
                    self._replicas_updated_event.clear()
                    await self._replicas_updated_event.wait()
                for rank in await self.choose_replicas(self._replicas_list, pending_request):
                    t0 = time.perf_counter_ns()
                    replica = await self._select_from_candidate_replicas(rank, attempt) if rank else None
                    self._timings.add("rank", time.perf_counter_ns() - t0)
                    if replica is not None:
                        self._record_queue_wait_time(pending_request)
                        self._sent(pending_request, replica.replica_id)
                        return replica
                if attempt:
                    await self._backoff(attempt - 1)
                attempt += 1
        except asyncio.CancelledError:
            booking = getattr(pending_request, _BOOKING, None)
            if booking is not None and booking.live:
                booking.routing = False
                if not any(booking.attempts.values()):  # no send of it is still to complete
                    self._free(booking)
            raise

    # ---- lifecycle ---------------------------------------------------------------------------------

    def _sent(self, pr: PendingRequest, replica_id: ReplicaID) -> None:
        booking: Optional[Booking] = getattr(pr, _BOOKING, None)
        if booking is None or not booking.live:
            return
        booking.routing = False
        booking.sent_to(replica_id)
        self._want(booking, replica_id)

    def _want(self, booking: Booking, replica_id: ReplicaID) -> None:
        wid = self._worker_ids.get(replica_id)
        if wid is not None and wid != booking.wanted:
            booking.wanted = wid
            self._spawn(self._move(booking))

    def on_request_routed(self, pending_request: PendingRequest, replica_id: ReplicaID, result: ReplicaResult) -> None:
        """The replica accepted the request: the booking follows it if Serve routed elsewhere."""
        booking: Optional[Booking] = getattr(pending_request, _BOOKING, None)
        if booking is None or not booking.live:
            return
        if not booking.attempts:  # routed by Serve's own loop, not _choose_replica_for_request
            booking.sent_to(replica_id)
        if booking.replica_id == replica_id:
            self._want(booking, replica_id)
            on_delivered(result, lambda: self._delivered.append(booking))  # from the caller's thread

    def _free_early(self, booking: Booking) -> None:
        """Frees (in front of the selection under way) the booking of a request whose caller has its
        answer; Serve's completion of that send is then skipped (``_finished``)."""
        if not booking.live or booking.replica_id is None:
            return
        self._bookings.remove(booking)
        self._early[(booking.replica_id, booking.internal_request_id)] += 1
        self.counters["freed_on_answer"] += 1
        self._free_soon(booking)

    def on_request_completed(self, replica_id: ReplicaID, internal_request_id: str) -> None:
        """Frees the booking (``DELETE /reservations/{id}``) once its last send finished."""
        key = (replica_id, internal_request_id)
        if self._early.get(key):  # freed when its caller got the answer
            self._early[key] -= 1
            if not self._early[key]:
                del self._early[key]
            return
        booking = self._bookings.completed(replica_id, internal_request_id)
        if booking is not None:
            self._free_soon(booking)

    def timings(self) -> Dict[str, float]:
        """Medians (µs) of where the last requests' time went in the router (``_timings.PARTS``)."""
        return self._timings.medians_us()

    def reset_timings(self) -> None:
        self._timings.reset()

    def stats(self) -> Dict[str, Any]:
        """Counters for inspection: selections that fell back (by reason), moves, frees, TTL frees,
        live bookings, workers registered and deleted, and whether the service is down."""
        booked = self.counters["bookings"]
        return {**self.counters, "deployment": f"{self._deployment_id.app_name}/{self._deployment_id.name}",
                "booking_ms_mean": 1e3 * self._booking_s / booked if booked else None,
                "live_bookings": len(self._bookings), "registered": self._registry.registered,
                "deleted": self._registry.deleted, "down": self._availability.down,
                "transport": self._client.transport_name}
