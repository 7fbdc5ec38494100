"""SelectServiceRouter in a real Ray Serve (Ray 2.58.0, loopback only), against real services.

One Ray session for the module: ``ray.init(num_cpus=2, include_dashboard=False)``, Serve without
its HTTP proxy, replicas with ``num_cpus=0``; handles in this driver (so the routers run here and
``routers()`` sees them). Shut down at the end, and the Ray processes are checked to be gone.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
import unittest
from typing import Any, Dict, List, Set, Tuple

from _support import (
    KV_URL, MISSING, SERVICE_URL, ServiceProcess, active_by_worker, http_json, rss_mb, wait_for, workers,
)

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
HERE = os.path.dirname(os.path.abspath(__file__))
os.environ["PYTHONPATH"] = os.pathsep.join([HERE] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

import ray  # noqa: E402
from ray import serve  # noqa: E402
from ray.serve.config import RequestRouterConfig  # noqa: E402

from fake_engines import FakeEngine, Gate  # noqa: E402
from select_service_client.ray import SelectServiceRouter, routers, worker_id_for_replica  # noqa: E402

_RAY_PIDS: List[int] = []
_KEEP: List[Any] = []  # a non-detached actor lives while a handle to it does


def setUpModule() -> None:
    if MISSING:
        raise unittest.SkipTest(f"{', '.join(MISSING)} not set (test/integration/ray/ray-serve.test.ts sets them)")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    node = ray._private.worker._global_node
    _RAY_PIDS.extend(p.process.pid for infos in node.all_processes.values() for p in infos)
    serve.start(proxy_location="Disabled")
    _KEEP.append(Gate.options(name="gate", namespace="select-service-tests").remote())


def tearDownModule() -> None:
    if not ray.is_initialized():
        return
    serve.shutdown()
    ray.shutdown()

    def alive() -> List[int]:
        out = []
        for pid in _RAY_PIDS:
            try:
                os.kill(pid, 0)
                out.append(pid)
            except ProcessLookupError:
                pass
        return out

    wait_for("the Ray processes to exit", lambda: not alive(), timeout=60)


def toks(seed: int, n: int) -> List[int]:
    return list(range(seed * 1000 + 1, seed * 1000 + 1 + n))


DEPLOYMENTS: Dict[str, Any] = {}


def deploy(app: str, url: str, replicas: int, kv: bool = False, **router_kwargs: Any) -> Any:
    """Runs the app and makes one request: a handle's router (and so the registration of the
    replicas) starts with its first request."""
    config = RequestRouterConfig(
        request_router_class=SelectServiceRouter, request_routing_stats_period_s=0.5,
        request_router_kwargs={"select_service_url": url, "timeout_s": 5.0, **router_kwargs})
    dep = DEPLOYMENTS[app] = serve.deployment(FakeEngine, name=app, num_replicas=replicas, max_ongoing_requests=32,
                                              ray_actor_options={"num_cpus": 0}, request_router_config=config)
    handle = serve.run(dep.bind(url, kv), name=app, route_prefix=None)
    handle.remote("warm-up").result(timeout_s=60)
    return handle


def replica_uids(app: str) -> Set[str]:
    prefix = f"SERVE_REPLICA::{app}#{app}#"
    return {a["name"][len(prefix):] for a in ray.util.list_named_actors(all_namespaces=True)
            if a["name"].startswith(prefix)}


def router_of(app: str) -> Any:
    found = [r for r in routers() if r._deployment_id.name == app]
    assert len(found) == 1, f"expected one router for {app} in the driver, found {len(found)}"
    return found[0]


def stream(handle: Any, tokens: List[int], gate: str = None, max_tokens: int = 32) -> Tuple[Any, str]:
    gen = handle.options(stream=True).generate.remote("p", request_token_ids=tokens, max_tokens=max_tokens, gate=gate)
    return gen, next(gen)["replica"]


def finish(gen: Any) -> Dict[str, Any]:
    return list(gen)[-1]


def open_gate(key: str) -> None:
    ray.get(ray.get_actor("gate", namespace="select-service-tests").open.remote(key))


def registered(url: str, app: str) -> Set[int]:
    return {w["worker_id"] for w in workers(url, app)}


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)


class EngineTest(unittest.TestCase):
    """Approximate mode: 3 replicas; the tests run in order (the last ones kill and scale)."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.h = deploy("engine", SERVICE_URL, 3)

    def workers_match_replicas(self) -> Set[int]:
        def same() -> Any:
            want = {worker_id_for_replica(u) for u in replica_uids("engine")}
            return want if want and registered(SERVICE_URL, "engine") == want else None
        return wait_for("the registered workers to equal the replicas", same)

    def test_1_workers_are_the_replicas(self) -> None:
        ids = self.workers_match_replicas()
        self.assertEqual(len(ids), 3)
        # a replica is registered from the router's defaults until Serve hands the router its first
        # routing_stats (record_routing_stats() runs in the replica, on Serve's schedule); the record
        # is then updated in place
        from_stats = wait_for("the replicas' routing_stats to reach the records", lambda: all(
            (w["block_size"], w["max_num_batched_tokens"]) == (16, 4096) for w in workers(SERVICE_URL, "engine")))
        self.assertTrue(from_stats)
        self.assertEqual(sorted(w["worker_id"] for w in workers(SERVICE_URL, "engine")), sorted(ids))
        for w in workers(SERVICE_URL, "engine"):
            self.assertEqual(w["lifecycle"], "schedulable", w)
            self.assertTrue(w["endpoint"].startswith("ray://SERVE_REPLICA::engine#engine#"), w)

    def test_2_each_request_runs_where_it_is_booked(self) -> None:
        self.workers_match_replicas()
        for i in range(6):
            gen, uid = stream(self.h, toks(10 + i, 40), gate=f"booked-{i}", max_tokens=48)
            active = wait_for("the booking", lambda: {w: n for w, n in active_by_worker(SERVICE_URL, "engine").items() if n})
            self.assertEqual(active, {worker_id_for_replica(uid): 1}, f"request {i} runs on {uid}")
            open_gate(f"booked-{i}")
            done = finish(gen)
            self.assertEqual((done["prefill_reported"], done["blocks_reported"]), (True, 3), done)
            wait_for("the booking to be freed", lambda: not any(active_by_worker(SERVICE_URL, "engine").values()))
        self.assertEqual(router_of("engine").stats().get("moves", 0), 0)

    def test_3_shared_prefix_sticks_to_one_replica(self) -> None:
        prefix = toks(50, 96)
        replicas = []
        for i in range(6):
            gen, uid = stream(self.h, prefix + toks(60 + i, 16))
            finish(gen)
            replicas.append(uid)
        self.assertEqual(len(set(replicas)), 1, replicas)

    def test_4_sixteen_in_flight(self) -> None:
        uids = replica_uids("engine")
        router = router_of("engine")
        before, booked, first = rss_mb(), router.stats()["bookings"], router.stats()
        deadline = time.monotonic() + 120
        for wave in range(4):
            responses = [self.h.remote("p", request_token_ids=toks(100 + wave * 16 + i, 48)) for i in range(16)]
            got = [r.result(timeout_s=max(1.0, deadline - time.monotonic())) for r in responses]
            self.assertTrue(set(got) <= uids, got)
        stats = router.stats()
        self.assertEqual(stats["bookings"] - booked, 64, stats)
        self.assertEqual({k: v for k, v in stats.items() if k.startswith("fallback_")},
                         {k: v for k, v in first.items() if k.startswith("fallback_")})  # the warm-up's only
        wait_for("every booking to be freed", lambda: not any(active_by_worker(SERVICE_URL, "engine").values()))
        self.assertLess(rss_mb() - before, 300, "the driver's memory grew by more than 300 MB for 64 requests")

    def test_5_a_killed_replicas_bookings_are_freed(self) -> None:
        self.workers_match_replicas()
        held = [(stream(self.h, toks(300 + i, 48), gate=f"kill-{i}"), f"kill-{i}") for i in range(6)]
        by_uid: Dict[str, int] = {}
        for (_, uid), _key in held:
            by_uid[uid] = by_uid.get(uid, 0) + 1
        victim = max(by_uid, key=lambda u: by_uid[u])
        wid = worker_id_for_replica(victim)
        wait_for("6 bookings", lambda: sum(active_by_worker(SERVICE_URL, "engine").values()) == 6)
        ray.kill(ray.get_actor(f"SERVE_REPLICA::engine#engine#{victim}", namespace="serve"), no_restart=True)
        for (gen, uid), key in held:
            if uid == victim:
                with self.assertRaises(Exception):
                    finish(gen)
        survivors = 6 - by_uid[victim]
        wait_for("the dead replica's worker and bookings to go",
                 lambda: wid not in registered(SERVICE_URL, "engine")
                 and sum(active_by_worker(SERVICE_URL, "engine").values()) == survivors)
        for (gen, uid), key in held:
            if uid != victim:
                open_gate(key)
                self.assertTrue(finish(gen)["done"])
        wait_for("every booking to be freed", lambda: not any(active_by_worker(SERVICE_URL, "engine").values()))
        self.assertNotIn(wid, self.workers_match_replicas())  # the replacement is registered

    def test_6_scaling_to_2_replicas_deletes_workers(self) -> None:
        # a Python-API redeploy starts new replicas (Serve gives the code a new version), so every
        # old worker must go and the 2 new replicas must be the workers
        before = self.workers_match_replicas()
        deleted = router_of("engine").stats()["deleted"]
        serve.run(DEPLOYMENTS["engine"].options(num_replicas=2).bind(SERVICE_URL, False), name="engine",
                  route_prefix=None)
        after = wait_for("2 workers", lambda: (lambda ids: ids if len(ids) == 2 and len(replica_uids("engine")) == 2
                                                else None)(self.workers_match_replicas()))
        self.assertFalse(after & before, (before, after))
        self.assertEqual(router_of("engine").stats()["deleted"] - deleted, 3)


class ExampleTest(unittest.TestCase):
    """examples/ray_serve_router.py, deployed as it is."""

    def test_the_example_app(self) -> None:
        import importlib.util

        path = os.path.join(HERE, "..", "..", "..", "examples", "ray_serve_router.py")
        spec = importlib.util.spec_from_file_location("ray_serve_router_example", path)
        assert spec is not None and spec.loader is not None
        example = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example)
        # a generous timeout: this test checks the routing, not the fallback (OutageTest does), and on a
        # busy machine a booking can take longer than the example's 50 ms
        handle = serve.run(example.build_app(SERVICE_URL, name="example", timeout_s=5.0), name="example",
                           route_prefix=None)
        list(handle.options(stream=True).generate.remote("warm-up", max_tokens=1))
        wait_for("the example's workers", lambda: registered(SERVICE_URL, "example") == {
            worker_id_for_replica(u) for u in replica_uids("example")} and len(replica_uids("example")) == 2)
        answers = example.main(handle)
        self.assertEqual(len(answers), 4)
        self.assertEqual(len(set(answers.values())), 1, answers)  # the shared document sticks
        stats = router_of("example").stats()
        self.assertGreaterEqual(stats["bookings"], 4, stats)
        wait_for("every booking to be freed", lambda: not any(active_by_worker(SERVICE_URL, "example").values()))
        serve.delete("example")


class KvEventsTest(unittest.TestCase):
    """A service fed by KV events: the fake engines publish vLLM batches over ZMQ PUB."""

    def test_kv_events_end_to_end(self) -> None:
        h = deploy("kvengine", KV_URL, 2, kv=True)

        def feeds() -> Any:
            ws = workers(KV_URL, "kvengine")
            ready = [w for w in ws if w.get("kv_events_endpoints") and w["lifecycle"] == "schedulable"
                     and all(f["state"] in ("connected", "live") for f in w.get("kv_events") or [{"state": "none"}])]
            return ws if len(ready) == 2 and {w["worker_id"] for w in ws} == {
                worker_id_for_replica(u) for u in replica_uids("kvengine")} else None
        ws = wait_for("both KV feeds to connect", feeds)
        for w in ws:
            self.assertRegex(w["kv_events_endpoints"]["0"], r"^tcp://127\.0\.0\.1:\d+$")
            self.assertEqual(w["block_size"], 16)

        prompt = toks(500, 128)  # 8 blocks
        gen, uid = stream(h, prompt)
        finish(gen)
        wid = worker_id_for_replica(uid)

        def indexed() -> Any:
            rows = http_json(f"{KV_URL}/overlap_scores", "POST", {"model_name": "kvengine", "token_ids": prompt})["workers"]
            blocks = {r["worker_id"]: r["device_blocks"] for r in rows}
            return blocks if blocks.get(wid) == 8 else None
        blocks = wait_for("the engine's KV events to reach the index", indexed)
        self.assertEqual(sum(blocks.values()), 8, blocks)  # only the engine that stored them
        for i in range(4):  # the cached prefix draws its continuations
            gen, other = stream(h, prompt[:96] + toks(520 + i, 32))
            finish(gen)
            self.assertEqual(other, uid)
        serve.delete("kvengine")


class OutageTest(unittest.TestCase):
    """A service of this test: stopped (requests still succeed) and started again (routing resumes)."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.svc = ServiceProcess().start()
        cls.h = deploy("edge", cls.svc.url, 2, timeout_s=0.5, retry_after_s=0.3, booking_ttl_s=2.0)
        wait_for("edge workers", lambda: len(registered(cls.svc.url, "edge")) == 2)
        cls.log = Captured()
        logging.getLogger("ray.serve.select_service").addHandler(cls.log)

    @classmethod
    def tearDownClass(cls) -> None:
        logging.getLogger("ray.serve.select_service").removeHandler(cls.log)
        serve.delete("edge")
        cls.svc.stop()

    def call(self, i: int) -> str:
        return self.h.remote("p", request_token_ids=toks(700 + i, 32)).result(timeout_s=60)

    def test_a_ttl_frees_a_booking_whose_completion_never_came(self) -> None:
        async def choose_only() -> str:  # a replica chosen but never called: no completion will come
            async with self.h.choose_replica("p", request_token_ids=toks(690, 32)) as selection:
                return selection.replica_id
        uid = asyncio.run(choose_only())
        self.assertIn(worker_id_for_replica(uid), registered(self.svc.url, "edge"))
        wait_for("the TTL to free it", lambda: router_of("edge").stats().get("expired", 0) >= 1, timeout=30)
        wait_for("no booking left", lambda: not any(active_by_worker(self.svc.url, "edge").values()))
        self.assertEqual(self.log.count("whose completion never came"), 1, self.log.lines)

    def test_b_requests_succeed_while_the_service_is_down(self) -> None:
        uids = replica_uids("edge")
        router = router_of("edge")
        for i in range(3):
            self.assertIn(self.call(i), uids)
        booked = router.stats()["bookings"]
        self.svc.stop()
        fallbacks = lambda: sum(v for k, v in router.stats().items() if k.startswith("fallback_"))  # noqa: E731
        before = fallbacks()
        for i in range(10):
            self.assertIn(self.call(10 + i), uids)
        self.assertEqual(fallbacks() - before, 10, router.stats())
        self.assertEqual(router.stats()["bookings"], booked)
        self.assertEqual(self.log.count("is not answering"), 1, self.log.lines)

        self.svc.start()  # same port, empty: the router registers its workers again
        wait_for("bookings to resume", lambda: self.call(50) and router.stats()["bookings"] > booked, timeout=60)
        wait_for("workers registered again", lambda: len(registered(self.svc.url, "edge")) == 2)
        self.assertEqual(self.log.count("answers again after"), 1, self.log.lines)
        self.assertEqual(self.log.count("is not answering"), 1, self.log.lines)


if __name__ == "__main__":
    unittest.main()
