"""SelectServiceRouter against Serve's default router (PowerOfTwoChoices), in one Ray session.

Run by bench/ray.bench.ts (``npm run bench -- ray``) in the Ray venv, with ``SELECT_SERVICE_URL``
(a service in approximate mode). Two deployments of the same trivial async engine (2 replicas,
``num_cpus=0``), one per router (``--transports`` adds one per transport of ours); requests carry
144 token ids. Printed as JSON lines:

- sequential: one request at a time, the routers interleaved request by request; p50 per router;
- 16 in flight: bursts of ``--burst`` requests with 16 outstanding, the routers alternating burst
  by burst; req/s per burst and the median ratio to the default;
- booking: ``POST /select_and_reserve`` + ``DELETE`` from a plain asyncio loop with our client
  (what the HTTP call costs without Serve), and the router's own mean booking time.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from typing import Any, Dict, List

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import ray  # noqa: E402
from ray import serve  # noqa: E402
from ray.serve.config import RequestRouterConfig  # noqa: E402

from select_service_client.aio import AsyncSelectServiceClient  # noqa: E402
from select_service_client.ray import SelectServiceRouter, routers  # noqa: E402

URL = os.environ["SELECT_SERVICE_URL"]


class Engine:
    async def __call__(self, prompt: str, request_token_ids: Any = None) -> int:
        return 1


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def tokens(i: int) -> List[int]:
    return list(range(1, 129)) + [1000 + i % 50_000] * 16  # a shared 128-token prefix, 16 of its own


async def plain_loop_booking(n: int) -> Dict[str, float]:
    client = AsyncSelectServiceClient(URL, timeout=5.0)
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sequential", type=int, default=600)
    ap.add_argument("--burst", type=int, default=400)
    ap.add_argument("--bursts", type=int, default=5)
    # the router's default transport (asyncio), unless told otherwise
    ap.add_argument("--transports", default="asyncio")
    args = ap.parse_args()

    emit(event="plain-loop", **asyncio.run(plain_loop_booking(400)))
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    try:
        serve.start(proxy_location="Disabled")
        opts = dict(num_replicas=2, max_ongoing_requests=64, ray_actor_options={"num_cpus": 0})
        handles: Dict[str, Any] = {}
        for transport in args.transports.split(","):
            name = f"select-service-{transport}"
            config = RequestRouterConfig(request_router_class=SelectServiceRouter, request_router_kwargs={
                "select_service_url": URL, "model_name": name, "transport": transport, "timeout_s": 1.0})
            dep = serve.deployment(Engine, name=name, request_router_config=config, **opts)
            handles[name] = serve.run(dep.bind(), name=name, route_prefix=None)
        handles["default"] = serve.run(serve.deployment(Engine, name="default", **opts).bind(), name="default",
                                       route_prefix=None)

        def one(handle: Any, i: int) -> float:
            t = time.perf_counter()
            handle.remote("p", request_token_ids=tokens(i)).result()
            return time.perf_counter() - t

        for i in range(100):  # warm-up: routers made, workers registered, connections open
            for h in handles.values():
                one(h, i)
        lat: Dict[str, List[float]] = {k: [] for k in handles}
        for i in range(args.sequential):
            for k, h in handles.items():
                lat[k].append(one(h, i))
        p50 = {k: 1e3 * statistics.median(v) for k, v in lat.items()}
        emit(event="sequential", requests=args.sequential, p50_ms=p50,
             difference_ms={k: p50[k] - p50["default"] for k in p50 if k != "default"})

        async def burst(handle: Any, n: int) -> float:
            sem = asyncio.Semaphore(16)

            async def go(i: int) -> None:
                async with sem:
                    await handle.remote("p", request_token_ids=tokens(i))
            t = time.perf_counter()
            await asyncio.gather(*[go(i) for i in range(n)])
            return n / (time.perf_counter() - t)

        async def bursts() -> Dict[str, List[float]]:
            out: Dict[str, List[float]] = {k: [] for k in handles}
            for _ in range(args.bursts):
                for k, h in handles.items():
                    out[k].append(await burst(h, args.burst))
            return out
        rates = asyncio.run(bursts())
        ratios = {k: statistics.median(a / b for a, b in zip(v, rates["default"])) for k, v in rates.items() if k != "default"}
        emit(event="16-in-flight", burst=args.burst, req_per_s={k: [round(x) for x in v] for k, v in rates.items()},
             median_ratio_to_default=ratios)
        for r in routers():
            emit(event="router", **{k: v for k, v in r.stats().items() if v is not None})
    finally:
        serve.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()
