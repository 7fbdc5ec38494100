"""One router's driver process of the Ray routing bench (started by ray_routing_bench.py).

Joins the bench's Ray session, holds the handle of one app (so that app's router runs here, on
this process's Serve router loop), warms the router up, then obeys stdin:

- ``go <epoch seconds>``: replays the trace open-loop from that wall-clock time (request i sent at
  ``start + t_i x time_scale``, whatever is still in flight; with ``--max-routing`` a request
  waits here while that many are being routed (sent, no replica assigned yet), and that wait
  counts in its TTFT) and prints ``{"event": "replay"}``;
- ``probe <n>``: ``n`` sequential zero-cost requests; prints their latencies;
- ``exit``.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import sys
import time
import urllib.request
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ray  # noqa: E402
from ray import serve  # noqa: E402

from ray_routing_options import bench_args, max_routing, trace  # noqa: E402
from ray_routing_replica import Prompt, token_text  # noqa: E402


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def call(handle: Any, tokens: List[int], output: List[int], probe: bool = False) -> Any:
    return handle.options(stream=True).generate.remote(Prompt(token_text(tokens)), request_token_ids=tokens,
                                                        max_tokens=len(output), output_ids=output, probe=probe)


class WarningCounter(logging.Filter):
    """Counts (and keeps off the output) Serve's repeated routing warnings: a queue-length probe
    that missed its deadline, a request not routed after many attempts."""

    KINDS = {"Failed to get queue length": "queue_len_probe_timeouts", "Failed to route request": "route_retries_50"}

    def __init__(self) -> None:
        super().__init__()
        self.counts: Dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        for prefix, kind in self.KINDS.items():
            if message.startswith(prefix):
                self.counts[kind] = self.counts.get(kind, 0) + 1
                return False
        return True


SERVE_WARNINGS = WarningCounter()


def workers_of(url: str, model: str) -> List[Dict[str, Any]]:
    with urllib.request.urlopen(f"{url}/workers?model_name={model}", timeout=5) as resp:
        return json.loads(resp.read())


def kv_feed_totals(url: str, model: str) -> Dict[str, int]:
    """The service's KV-event counters over the replicas' feeds (GET /workers)."""
    totals: Dict[str, int] = {}
    for w in workers_of(url, model):
        for feed in w.get("kv_events") or []:
            for key in ("batches", "blocks_stored", "blocks_removed", "dropped", "gaps", "block_size_mismatches"):
                totals[key] = totals.get(key, 0) + int(feed.get(key) or 0)
    return totals


def kv_feeds_ready(url: str, model: str, replicas: int) -> bool:
    """Every replica is a schedulable worker whose KV feed is connected."""
    records = workers_of(url, model)
    ok = [w for w in records if w.get("lifecycle") == "schedulable"
          and all(f.get("state") in ("connected", "live") for f in w.get("kv_events") or [{}])]
    return len(ok) == replicas


def warm_up(handle: Any, app: str, replicas: int) -> Dict[str, Any]:
    """Requests with prompts of their own (2 blocks, nothing shared) until the router has started
    and, for the KV-fed service, every replica's feed is connected (stats come every second)."""
    rng = random.Random(f"warm-{app}")
    t = time.monotonic()
    url = os.environ.get("SELECT_SERVICE_KV_URL", "")
    sent = 0
    while True:
        for _ in range(4):
            list(call(handle, [rng.randrange(1, 30_000) for _ in range(32)], [1, 2]))
            sent += 1
        if app != "select-kv" or kv_feeds_ready(url, app, replicas):
            break
        if time.monotonic() - t > 120:
            raise RuntimeError(f"{app}: the KV feeds of {replicas} replicas did not connect in 120 s")
        time.sleep(0.5)
    time.sleep(1.0)  # a subscriber just connected may miss what is published at once
    return {"seconds": round(time.monotonic() - t, 1), "requests": sent}


async def replay(handle: Any, args: Any, start_epoch: float) -> Dict[str, Any]:
    reqs = trace(args)
    loop = asyncio.get_running_loop()
    start = loop.time() + (start_epoch - time.time())
    cap = max_routing(args, args.app)
    slots = asyncio.Semaphore(cap) if cap > 0 else None
    rows: List[Optional[List[Any]]] = [None] * len(reqs)
    engines: Dict[str, List[Dict[str, Any]]] = {}  # replica -> [first snapshot, last snapshot]
    peak = [0, 0]

    async def one(i: int) -> None:
        r = reqs[i]
        due = start + r.t * args.time_scale
        await asyncio.sleep(max(0.0, due - loop.time()))
        peak[0] += 1
        peak[1] = max(peak[1], peak[0])
        try:
            first_at = ttft = None
            last: Dict[str, Any] = {}
            if slots is None:
                sent = loop.time()
                gen = call(handle, r.tokens, r.output)
            else:
                async with slots:
                    sent = loop.time()
                    gen = call(handle, r.tokens, r.output)
                    await gen._fetch_future_result_async()  # Serve's own (private) wait for a replica
            async for chunk in gen:
                if first_at is None:
                    first_at, ttft = loop.time(), chunk["ttft_s"]
                last = chunk
            snaps = engines.setdefault(last["replica"], [last["engine"], last["engine"]])
            if last["engine"]["uptime_s"] >= snaps[1]["uptime_s"]:
                snaps[1] = last["engine"]
            if last["engine"]["uptime_s"] < snaps[0]["uptime_s"]:
                snaps[0] = last["engine"]
            # kind, due->first (driver TTFT), sent->first, replica TTFT, hits, prompt blocks, queue, replica,
            # due->sent (held by --max-routing)
            rows[i] = [r.kind, first_at - due, first_at - sent, ttft, last["hit_blocks"], last["prompt_blocks"],
                       last["queue_s"], last["replica"], sent - due]
        except Exception as err:  # counted, and the bench says how many
            rows[i] = [r.kind, None, None, None, 0, 0, 0, repr(err)[:200], 0]
        finally:
            peak[0] -= 1

    async def bounded(i: int) -> None:
        # a router that stalls must not hold the bench: past its deadline a request is an error
        deadline = start + reqs[i].t * args.time_scale + args.request_timeout_s - loop.time()
        try:
            await asyncio.wait_for(one(i), deadline)
        except asyncio.TimeoutError:
            rows[i] = [reqs[i].kind, None, None, None, 0, 0, 0, f"no answer in {args.request_timeout_s} s", 0]

    t0 = time.monotonic()
    await asyncio.gather(*(bounded(i) for i in range(len(reqs))))
    stats: Dict[str, Any] = {"serve_warnings": dict(SERVE_WARNINGS.counts)}
    if args.app.startswith("select-"):
        from select_service_client.ray import routers

        stats["router"] = [{k: v for k, v in r.stats().items() if v is not None} for r in routers()]
    if args.app == "select-kv":
        stats["kv_feed"] = kv_feed_totals(os.environ["SELECT_SERVICE_KV_URL"], args.app)
    return {"event": "replay", "rows": rows, "engines": engines, "peak_in_flight": peak[1],
            "seconds": round(time.monotonic() - t0, 1), "router_stats": stats}


def main() -> None:
    args = bench_args()
    ray.init(address=args.address, logging_level="WARNING", log_to_driver=False)
    logging.getLogger("ray.serve").addFilter(SERVE_WARNINGS)
    handle = serve.get_app_handle(args.app)
    emit(event="ready", **warm_up(handle, args.app, args.replicas))
    probe_rng = random.Random(f"probe-{args.app}")
    # one loop for the process, never closed: Serve's router thread may still schedule callbacks
    # on it (cancelled requests), and asyncio.run's closing would race them
    loop = asyncio.new_event_loop()
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "go":
            emit(**loop.run_until_complete(replay(handle, args, float(arg))))
        elif cmd == "probe":
            seconds = []
            for _ in range(int(arg)):
                tokens = [probe_rng.randrange(1, 30_000) for _ in range(64)]
                t = time.perf_counter()
                list(call(handle, tokens, [1], probe=True))
                seconds.append(time.perf_counter() - t)
            emit(seconds=seconds)
        elif cmd == "exit":
            break


if __name__ == "__main__":
    main()
