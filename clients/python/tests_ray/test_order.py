"""The order of a router's calls to the service, in a real Ray Serve (its own Ray session, set up
as test_serve.py's): a finished request's free reaches the service before the next selection, a
retried request finds no conflict with its own earlier booking, and a restarted service gets the
replicas registered again within the selection that found it empty.

The retry scenarios drive the router in the driver the way Serve's ``_route_and_send_request_once``
does (python/ray/serve/_private/router.py): choose, send, and on a rejection the completion of
the rejected send plus a second choice for the same ``PendingRequest``.
"""
from __future__ import annotations

import asyncio
import uuid
import unittest
from typing import Any, Awaitable, Callable, Dict, List

from _support import SERVICE_URL, ServiceProcess, active_by_worker, http_json, wait_for
from test_serve import deploy, registered, router_of, setUpModule, tearDownModule, toks  # noqa: F401 (one session)

from ray import serve
from ray.serve._private.common import RequestMetadata
from ray.serve._private.request_router.common import PendingRequest
from ray.serve.config import RequestRouterConfig

from fake_engines import FakeEngine

from select_service_client.ray import SelectServiceRouter, selection_id_for, worker_id_for_replica

_BOOKING = "_select_service_booking"


def on_loop(router: Any, scenario: Callable[[], Awaitable[Any]]) -> Any:
    """Runs ``scenario`` on the router's event loop (Serve's router thread), as Serve would."""
    return asyncio.run_coroutine_threadsafe(scenario(), router._event_loop).result(timeout=60)


def pending(app: str, tokens: List[int]) -> PendingRequest:
    """A request as Serve hands it to the router (made on the router's loop: it holds a future)."""
    iid = str(uuid.uuid4())
    return PendingRequest(args=["p"], kwargs={"request_token_ids": tokens},
                          metadata=RequestMetadata(request_id=iid, internal_request_id=iid, app_name=app))


def fallbacks(router: Any) -> Dict[str, int]:
    return {k: v for k, v in router.stats().items() if k.startswith("fallback_")}


class BackToBackTest(unittest.TestCase):
    def test_repeats_of_a_prompt_stay_on_its_replica(self) -> None:
        """12 calls of one prompt in a row, 20 times: a call's free is in the service before the next
        call's selection, so the replica holding the prompt is idle again and wins every time."""
        h = deploy("repeat", SERVICE_URL, 3)
        router = router_of("repeat")
        before = fallbacks(router)  # the warm-up call carries no token ids
        switched = {}
        for run in range(20):
            prompt = toks(3000 + run, 256)
            counters = router.stats()
            uids = [h.remote("p", request_token_ids=prompt).result(timeout_s=60) for _ in range(12)]
            if len(set(uids)) != 1:
                # what the router counted during the run (moves: Serve sent it elsewhere than the
                # service chose; fallback_*: the service did not answer in time) tells the cause
                moved = {k: v - counters.get(k, 0) for k, v in router.stats().items()
                         if isinstance(v, int) and not isinstance(v, bool) and v != counters.get(k, 0)}
                switched[run] = ("".join(chr(65 + sorted(set(uids)).index(u)) for u in uids), moved)
        self.assertEqual(switched, {}, "runs whose repeats switched replicas (A, B, C: replicas in the run), "
                         "with the router's counters that moved during the run")
        self.assertEqual(fallbacks(router), before)
        wait_for("every booking to be freed", lambda: not any(active_by_worker(SERVICE_URL, "repeat").values()))


class FreeSentAloneTest(unittest.TestCase):
    def test_the_next_selection_goes_out_behind_it(self) -> None:
        """A call's free goes out on its own when its 2 ms pass before the next call reaches the router
        (a starved machine); the next call's selection then comes while that DELETE is unanswered on
        another connection. It waits for it: the replica holding the prompt is idle again and wins
        every repeat (before, the selection overtook the free and the three replicas tied)."""
        deploy("alone", SERVICE_URL, 3)
        router = router_of("alone")
        wait_for("3 workers", lambda: len(registered(SERVICE_URL, "alone")) == 3)
        before, fell_back = router.stats(), fallbacks(router)

        async def scenario() -> List[str]:
            chosen = []
            for _ in range(12):
                pr = pending("alone", toks(7000, 256))
                replica = (await router.choose_replicas(router._replicas_list, pr))[0][0]
                router._sent(pr, replica.replica_id)
                router.on_request_completed(replica.replica_id, pr.metadata.internal_request_id)
                router._flush_frees()  # what the timer does when no selection came within 2 ms
                chosen.append(replica.replica_id.unique_id)
            return chosen
        chosen = on_loop(router, scenario)
        stats = router.stats()
        self.assertEqual(len(set(chosen)), 1, chosen)
        self.assertEqual(stats.get("waited_for_frees", 0) - before.get("waited_for_frees", 0), 11, stats)
        self.assertEqual(fallbacks(router), fell_back)
        wait_for("every booking to be freed", lambda: not any(active_by_worker(SERVICE_URL, "alone").values()))


class RetryTest(unittest.TestCase):
    """A request Serve routes again after a replica rejected it keeps one booking of its own."""

    @classmethod
    def setUpClass(cls) -> None:
        deploy("retry", SERVICE_URL, 2)
        cls.router = router_of("retry")
        wait_for("both workers", lambda: len(registered(SERVICE_URL, "retry")) == 2)

    def active(self) -> Dict[int, int]:
        return {w: n for w, n in active_by_worker(SERVICE_URL, "retry").items() if n}

    def test_a_rejected_send_completed_before_the_retry(self) -> None:
        """The rejected send's completion frees the booking; the retry books the same id at once. The
        free went out 2 ms later before, so the retry got 409 and took Serve's default choice."""
        router, before = self.router, fallbacks(self.router)

        async def scenario() -> Any:
            pr = pending("retry", toks(4000, 64))
            first = (await router.choose_replicas(router._replicas_list, pr))[0][0]
            router._sent(pr, first.replica_id)  # Serve sends it; the replica rejects it
            router.on_request_completed(first.replica_id, pr.metadata.internal_request_id)
            again = (await router.choose_replicas(router._replicas_list, pr))[0][0]  # Serve's retry
            router._sent(pr, again.replica_id)
            return pr, again
        pr, again = on_loop(router, scenario)
        booking = getattr(pr, _BOOKING)
        self.assertTrue(booking.live)
        self.assertEqual(fallbacks(router), before)
        self.assertEqual(self.active(), {worker_id_for_replica(again.replica_id.unique_id): 1})
        on_loop(router, self.complete(pr, again))
        wait_for("the booking to be freed", lambda: not self.active())

    def test_a_rejected_send_completed_while_the_retry_is_routed(self) -> None:
        """The completion arrives between the retry's choice and its send: the booking stays, and
        follows the request to the replica it is sent to."""
        router = self.router

        async def scenario() -> Any:
            pr = pending("retry", toks(4100, 64))
            first = (await router.choose_replicas(router._replicas_list, pr))[0][0]
            router._sent(pr, first.replica_id)
            await router.choose_replicas(router._replicas_list, pr)  # the retry starts ...
            router.on_request_completed(first.replica_id, pr.metadata.internal_request_id)  # ... the rejection lands
            other = next(r for r in router._replicas_list if r.replica_id != first.replica_id)
            router._sent(pr, other.replica_id)  # sent elsewhere: the booking moves
            return pr, other
        pr, other = on_loop(router, scenario)
        self.assertTrue(getattr(pr, _BOOKING).live)
        wid = worker_id_for_replica(other.replica_id.unique_id)
        wait_for("the booking to move", lambda: self.active() == {wid: 1})
        on_loop(router, self.complete(pr, other))
        wait_for("the booking to be freed", lambda: not self.active())

    def test_a_selection_that_timed_out_but_booked(self) -> None:
        """A first attempt past its deadline may still be booked in the service; the retry of the
        request sends that id's free in front of its own selection instead of meeting it (409)."""
        router, before = self.router, fallbacks(self.router)

        async def scenario() -> Any:
            pr = pending("retry", toks(4200, 64))
            sid = selection_id_for("retry", "retry", pr.metadata.internal_request_id)
            await asyncio.get_running_loop().run_in_executor(None, lambda: http_json(
                f"{SERVICE_URL}/select_and_reserve", "POST",
                {"model_name": "retry", "selection_id": sid, "token_ids": toks(4200, 64)}))
            router._free_late(sid)  # what a selection past its deadline leaves
            chosen = (await router.choose_replicas(router._replicas_list, pr))[0][0]
            router._sent(pr, chosen.replica_id)
            return pr, chosen
        pr, chosen = on_loop(router, scenario)
        self.assertTrue(getattr(pr, _BOOKING).live)
        self.assertEqual(fallbacks(router), before)
        self.assertEqual(sum(self.active().values()), 1)
        on_loop(router, self.complete(pr, chosen))
        wait_for("the booking to be freed", lambda: not self.active())

    def complete(self, pr: PendingRequest, replica: Any) -> Callable[[], Awaitable[None]]:
        async def done() -> None:
            self.router.on_request_completed(replica.replica_id, pr.metadata.internal_request_id)
        return done


class BurstTest(unittest.TestCase):
    def test_a_burst_of_64_with_rejections_is_all_booked(self) -> None:
        """64 requests at once on 3 replicas of 5 slots: replicas reject, Serve retries, and every
        request is still booked (no 409, no default choice) while the service is up."""
        config = RequestRouterConfig(request_router_class=SelectServiceRouter,
                                     request_router_kwargs={"select_service_url": SERVICE_URL, "timeout_s": 5.0})
        dep = serve.deployment(FakeEngine, name="burst", num_replicas=3, max_ongoing_requests=5,
                               ray_actor_options={"num_cpus": 0}, request_router_config=config)
        h = serve.run(dep.bind(SERVICE_URL, False), name="burst", route_prefix=None)
        h.remote("warm-up").result(timeout_s=60)
        wait_for("3 workers", lambda: len(registered(SERVICE_URL, "burst")) == 3)
        router = router_of("burst")
        booked, before = router.stats().get("bookings", 0), fallbacks(router)
        for response in [h.remote("p", request_token_ids=toks(6000 + i, 48)) for i in range(64)]:
            response.result(timeout_s=60)
        stats = router.stats()
        self.assertEqual(fallbacks(router), before, stats)
        self.assertGreaterEqual(stats["bookings"] - booked, 64, stats)
        wait_for("every booking to be freed", lambda: not any(active_by_worker(SERVICE_URL, "burst").values()))
        serve.delete("burst")


class RestartTest(unittest.TestCase):
    def test_a_restarted_service_gets_the_replicas_within_the_selection(self) -> None:
        """The service restarts between two requests (the router sees no outage): the next selection
        is answered 503 'no worker is registered'; the router registers its replicas and books it."""
        svc = ServiceProcess().start()
        try:
            h = deploy("restart", svc.url, 2, timeout_s=5.0)
            # the records are final once the replicas' routing_stats reached them (a pass of the registry
            # while the service is down would be an outage the router sees, not this test's case)
            wait_for("the workers, from their routing_stats", lambda: [w["max_num_batched_tokens"] for w in http_json(
                f"{svc.url}/workers?model_name=restart")] == [4096, 4096])
            router = router_of("restart")
            booked, before = router.stats().get("bookings", 0), fallbacks(router)
            svc.stop()
            svc.start()  # same port, no worker
            uid = h.remote("p", request_token_ids=toks(5000, 32)).result(timeout_s=60)
            stats = router.stats()
            self.assertIn(worker_id_for_replica(uid), registered(svc.url, "restart"), stats)
            self.assertEqual((stats["bookings"] - booked, stats.get("reregistered")), (1, 1), stats)
            self.assertEqual(fallbacks(router), before)
        finally:
            svc.stop()


if __name__ == "__main__":
    unittest.main()
