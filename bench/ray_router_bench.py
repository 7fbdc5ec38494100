"""SelectServiceRouter against Serve's default router (PowerOfTwoChoices) and Ray Serve LLM's
PrefixCacheAffinityRouter, in one Ray session.

Run by bench/ray.bench.ts (``npm run bench -- ray``) in the Ray venv, with ``SELECT_SERVICE_URL``
(a service in approximate mode). Deployments of the same trivial async engine (2 replicas,
``num_cpus=0``), one per router (``--transports`` adds one of ours per transport); every request
carries the same arguments to every router: a positional argument whose ``.prompt`` is the text
PrefixCacheAffinityRouter reads, and ``request_token_ids`` (144 ids) that ours reads. Printed as
JSON lines, all from one run:

- plain-loop: ``POST /select_and_reserve`` + ``DELETE`` from a plain asyncio loop with our client
  (what the HTTP call costs without Serve);
- sequential: one request at a time, the routers interleaved request by request; p50 per router;
- 16-in-flight: bursts of ``--burst`` requests with 16 outstanding, the routers alternating burst
  by burst; req/s per burst and the median ratio to the default (PrefixCacheAffinityRouter is
  left out: see prefix-in-flight);
- prefix-in-flight: PrefixCacheAffinityRouter with 4 in flight, last, bounded by ``--stall-s``
  (it stalled there on Ray 2.58: then ``stalled`` and how many requests were left);
- cpu-16-in-flight: CPU per request of each party (driver, Serve's router thread, service,
  replicas; bench/ray_cpu.py) in the bursts, median over bursts: less swayed by the machine's other
  load than req/s;
- router: our router's counters and where its time went (``parts_us``: medians per request);
- load: the machine's load average at the start and the end.

``--baseline=MODULE`` adds a deployment routed by ``MODULE.SelectServiceRouter`` (e.g. a copy of an
earlier ``select_service_client`` under another name on ``PYTHONPATH``), so that a change is
measured before and after in one interleaved run (bench/RESULTS.md, issue 28, says how).
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import statistics
import sys
import threading
import time
from typing import Any, Awaitable, Dict, List, Optional, TypeVar

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import ray  # noqa: E402
from ray import serve  # noqa: E402
from ray.serve.config import RequestRouterConfig  # noqa: E402

from select_service_client.aio import AsyncSelectServiceClient  # noqa: E402
from select_service_client.ray import SelectServiceRouter, routers  # noqa: E402

from ray_cpu import CpuMeter, loop_thread_id, medians, replica_pids  # noqa: E402

URL = os.environ["SELECT_SERVICE_URL"]
PREFIX_ROUTER = "ray.llm._internal.serve.routing_policies.prefix_aware.prefix_aware_router:PrefixCacheAffinityRouter"


class Prompt:
    """The positional argument PrefixCacheAffinityRouter reads (``arg.prompt``)."""

    def __init__(self, prompt: str) -> None:
        self.prompt = prompt


class Engine:
    async def __call__(self, prompt: Any, request_token_ids: Any = None) -> int:
        return 1


T = TypeVar("T")


def run_loop(coro: Awaitable[T]) -> T:
    """``asyncio.run`` without its final sweep of every task: that sweep walks asyncio's global
    task set, which Serve's router thread changes meanwhile (it crashed a run with "Set changed size
    during iteration" after PrefixCacheAffinityRouter stalled). The coroutines here end or are
    cancelled (``wait_for``) before they return."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def all_routers() -> List[Any]:
    """Our routers in this process, the baseline's (``--baseline``) too."""
    return routers() + [r for m in BASELINE for r in m.routers()]


BASELINE: List[Any] = []
"""The ``--baseline`` module's ``select_service_client.ray`` (imported in ``main``)."""


def parts(router: Any) -> Dict[str, float]:
    """``router.timings()`` (absent from routers before issue 28: ``{}``)."""
    return router.timings() if hasattr(router, "timings") else {}


def reset_parts() -> None:
    for r in all_routers():
        if hasattr(r, "reset_timings"):
            r.reset_timings()


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def tokens(i: int) -> List[int]:
    return list(range(1, 129)) + [1000 + i % 50_000] * 16  # a shared 128-token prefix, 16 of its own


def request(i: int) -> Dict[str, Any]:
    ids = tokens(i)
    return {"args": (Prompt(" ".join(map(str, ids))),), "kwargs": {"request_token_ids": ids}}


async def plain_loop_booking(n: int) -> Dict[str, Any]:
    client = AsyncSelectServiceClient(URL, timeout=5.0, transport="asyncio")  # the router's default
    await client.request("POST", "/workers", {"worker_id": 1, "model_name": "bench-plain", "endpoint": "ray://x",
                                              "block_size": 16})
    book, free = [], []
    for i in range(n):
        t0 = time.perf_counter()
        await client.request_json("POST", "/select_and_reserve", {"model_name": "bench-plain", "selection_id": f"p{i}",
                                                                  "token_ids": tokens(i), "allowed_worker_ids": [1]})
        t1 = time.perf_counter()
        await client.request("DELETE", f"/reservations/p{i}")
        book.append(t1 - t0)
        free.append(time.perf_counter() - t1)
    await client.request("DELETE", "/workers/1")
    await client.close()
    return {"select_and_reserve_p50_ms": 1e3 * statistics.median(book), "delete_p50_ms": 1e3 * statistics.median(free),
            "transport": client.transport_name}


APPS: Dict[str, str] = {"default": "default", "prefix-cache-affinity": "prefix"}
"""Handle name -> the app and deployment name, where they differ."""


def deploy(opts: Dict[str, Any], args: argparse.Namespace) -> Dict[str, Any]:
    handles: Dict[str, Any] = {}
    for transport in args.transports.split(","):
        name = f"select-service-{transport}"
        config = RequestRouterConfig(request_router_class=SelectServiceRouter, request_router_kwargs={
            "select_service_url": URL, "model_name": name, "transport": transport, "timeout_s": 1.0})
        handles[name] = serve.run(serve.deployment(Engine, name=name, request_router_config=config, **opts).bind(),
                                  name=name, route_prefix=None)
    for module in BASELINE:
        name = "select-service-baseline"
        config = RequestRouterConfig(request_router_class=module.SelectServiceRouter, request_router_kwargs={
            "select_service_url": URL, "model_name": name, "transport": "asyncio", "timeout_s": 1.0})
        handles[name] = serve.run(serve.deployment(Engine, name=name, request_router_config=config, **opts).bind(),
                                  name=name, route_prefix=None)
    handles["default"] = serve.run(serve.deployment(Engine, name="default", **opts).bind(), name="default",
                                   route_prefix=None)
    if args.prefix:
        config = RequestRouterConfig(request_router_class=PREFIX_ROUTER)
        handles["prefix-cache-affinity"] = serve.run(
            serve.deployment(Engine, name="prefix", request_router_config=config, **opts).bind(), name="prefix",
            route_prefix=None)
    return handles


async def burst(handle: Any, n: int, in_flight: int, done: Optional[List[int]] = None) -> float:
    sem = asyncio.Semaphore(in_flight)

    async def go(i: int) -> None:
        async with sem:
            r = request(i)
            await handle.remote(*r["args"], **r["kwargs"])
            if done is not None:
                done.append(i)
    t = time.perf_counter()
    await asyncio.gather(*[go(i) for i in range(n)])
    return n / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sequential", type=int, default=600)
    ap.add_argument("--burst", type=int, default=400)
    ap.add_argument("--bursts", type=int, default=5)
    # the router's default transport (asyncio), unless told otherwise
    ap.add_argument("--transports", default="asyncio")
    ap.add_argument("--prefix", type=int, default=1, help="0 leaves PrefixCacheAffinityRouter out")
    ap.add_argument("--stall-s", type=float, default=10.0)
    ap.add_argument("--baseline", default="", help="a module with another SelectServiceRouter to deploy beside ours")
    args = ap.parse_args()
    if args.baseline:
        BASELINE.append(importlib.import_module(args.baseline))

    emit(event="load", at="start", loadavg=os.getloadavg(), cpus=os.cpu_count())
    emit(event="plain-loop", **run_loop(plain_loop_booking(400)))
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    try:
        serve.start(proxy_location="Disabled")
        handles = deploy(dict(num_replicas=2, max_ongoing_requests=64, ray_actor_options={"num_cpus": 0}), args)

        def one(handle: Any, i: int) -> float:
            r = request(i)
            t = time.perf_counter()
            handle.remote(*r["args"], **r["kwargs"]).result()
            return time.perf_counter() - t

        for i in range(100):  # warm-up: routers made, workers registered, connections open
            for h in handles.values():
                one(h, i)
        reset_parts()
        lat: Dict[str, List[float]] = {k: [] for k in handles}
        for i in range(args.sequential):
            for k, h in handles.items():
                lat[k].append(one(h, i))
        p50 = {k: 1e3 * statistics.median(v) for k, v in lat.items()}
        emit(event="sequential", requests=args.sequential, p50_ms=p50,
             difference_ms={k: p50[k] - p50["default"] for k in p50 if k != "default"})
        for r in all_routers():
            emit(event="router-sequential", deployment=r.stats()["deployment"], parts_us=parts(r))
        rs = all_routers()
        meter = CpuMeter(int(os.environ.get("SELECT_SERVICE_PID", "0")), loop_thread_id(rs[0]._event_loop) if rs else 0,
                         {k: replica_pids(APPS.get(k, k), APPS.get(k, k)) for k in handles})

        concurrent = {k: h for k, h in handles.items() if k != "prefix-cache-affinity"}

        cpu: Dict[str, List[Dict[str, float]]] = {k: [] for k in concurrent}

        async def bursts() -> Dict[str, List[float]]:
            out: Dict[str, List[float]] = {k: [] for k in concurrent}
            for _ in range(args.bursts):
                for k, h in concurrent.items():
                    before = meter.snapshot(k)
                    out[k].append(await burst(h, args.burst, 16))
                    cpu[k].append(meter.per_request_us(before, meter.snapshot(k), args.burst))
            return out
        reset_parts()
        rates = run_loop(bursts())
        ratios = {k: statistics.median(a / b for a, b in zip(v, rates["default"])) for k, v in rates.items() if k != "default"}
        emit(event="16-in-flight", burst=args.burst, req_per_s={k: [round(x) for x in v] for k, v in rates.items()},
             median_ratio_to_default=ratios)
        emit(event="cpu-16-in-flight", us_per_request={k: medians(v) for k, v in cpu.items()},
             replicas={k: len(v) for k, v in meter.replicas.items()})
        for r in all_routers():
            emit(event="router-16-in-flight", deployment=r.stats()["deployment"], parts_us=parts(r))
        for r in all_routers():
            emit(event="router", **{k: v for k, v in r.stats().items() if v is not None})
        if "prefix-cache-affinity" in handles:
            prefix_in_flight(handles, args)
        emit(event="load", at="end", loadavg=os.getloadavg())
    finally:
        shut_down_within(30.0)


def shut_down_within(secs: float) -> None:
    """Serve and Ray shut down, or the process exits after `secs`: once PrefixCacheAffinityRouter
    has stalled, its requests never finish and `serve.shutdown()` waits for them forever (the
    driver meanwhile grew past 9 GB here). Ray's own processes go with the driver."""
    t = threading.Thread(target=lambda: (serve.shutdown(), ray.shutdown()), daemon=True)
    t.start()
    t.join(secs)
    if t.is_alive():
        sys.stderr.write(f"ray bench: Serve did not shut down within {secs:.0f} s (PrefixCacheAffinityRouter's stalled requests); exiting\n")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def prefix_in_flight(handles: Dict[str, Any], args: argparse.Namespace) -> None:
    """PrefixCacheAffinityRouter and the default with 4 in flight, 200 requests, bounded in time."""
    async def run() -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for name in ("default", "prefix-cache-affinity"):
            done: List[int] = []
            try:
                out[name] = round(await asyncio.wait_for(burst(handles[name], 200, 4, done), args.stall_s))
            except asyncio.TimeoutError:
                out[name] = f"stalled: {200 - len(done)} of 200 requests unfinished after {args.stall_s:.0f} s"
        return out
    emit(event="prefix-in-flight", in_flight=4, req_per_s=run_loop(run()))


if __name__ == "__main__":
    main()
