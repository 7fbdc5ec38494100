"""Routing quality in a real Ray Serve: one trace through the same fake engine behind each router.

Run by bench/ray-routing.bench.ts (``npm run bench -- ray-routing``) in the Ray venv, with
``SELECT_SERVICE_KV_URL`` (a service fed by KV events) and ``SELECT_SERVICE_URL`` (approximate
mode). One Ray session; one Serve app per router, each ``--replicas`` replicas of
ray_routing_replica.RoutingEngine (``num_cpus=0``):

- ``select-kv``: ``SelectServiceRouter``, the service fed by the replicas' vLLM KV events;
- ``select-approx``: ``SelectServiceRouter``, the service in approximate mode (its bookings);
- ``ray-prefix``: Ray 2.58's ``PrefixCacheAffinityRouter`` (its defaults);
- ``default``: Serve's default router (``PowerOfTwoChoicesRequestRouter``).

Every app's handle lives in a driver process of its own (ray_routing_driver.py; a router runs in
the process that holds the handle, on one event loop per process, and Ray's prefix router blocks
that loop with ``ray.get``), and all of them replay the trace at once from one start time, so
they share the machine's noise. Then the zero-cost pass: rounds of sequential ``probe`` requests
(the replica skips the engine), one router at a time, round after round.

Prints JSON lines: ``config``, one ``router`` line per router, ``done``.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ["PYTHONPATH"] = os.pathsep.join([HERE] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
sys.path.insert(0, HERE)

import ray  # noqa: E402
from ray import serve  # noqa: E402
from ray.serve.config import RequestRouterConfig  # noqa: E402

from ray_routing_options import ROUTERS, bench_args, engine_params, trace  # noqa: E402
from ray_routing_replica import RoutingEngine  # noqa: E402
from ray_routing_report import summarise  # noqa: E402


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def router_config(name: str, args: argparse.Namespace) -> RequestRouterConfig:
    if name.startswith("select-"):
        from select_service_client.ray import SelectServiceRouter

        url = os.environ["SELECT_SERVICE_KV_URL" if name == "select-kv" else "SELECT_SERVICE_URL"]
        kwargs: Dict[str, Any] = {"select_service_url": url, "model_name": name}
        if args.select_timeout_s is not None:
            kwargs["timeout_s"] = args.select_timeout_s
        return RequestRouterConfig(request_router_class=SelectServiceRouter, request_router_kwargs=kwargs,
                                   request_routing_stats_period_s=1.0)
    if name == "ray-prefix":
        from ray.llm._internal.serve.routing_policies.prefix_aware.prefix_aware_router import (
            PrefixCacheAffinityRouter,
        )

        return RequestRouterConfig(request_router_class=PrefixCacheAffinityRouter)
    return RequestRouterConfig()


def deploy(name: str, args: argparse.Namespace) -> None:
    report_url = None
    if name.startswith("select-"):
        report_url = os.environ["SELECT_SERVICE_KV_URL" if name == "select-kv" else "SELECT_SERVICE_URL"]
    dep = serve.deployment(RoutingEngine, name=name, num_replicas=args.replicas, max_ongoing_requests=1000,
                           ray_actor_options={"num_cpus": 0}, request_router_config=router_config(name, args))
    serve.run(dep.bind(engine_params(args), name == "select-kv", report_url), name=name, route_prefix=None)


class Driver:
    """A ray_routing_driver.py process: one router's handle, commands on stdin, JSON lines out."""

    def __init__(self, name: str, address: str) -> None:
        self.name = name
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "ray_routing_driver.py"), "--app", name,
                                      "--address", address, *sys.argv[1:]],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.lines.put(line)
        self.lines.put(None)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read(self, timeout_s: float) -> Dict[str, Any]:
        """The next JSON line; a driver silent for ``timeout_s`` is killed (a stalled router goes
        with it: Ray's prefix router, past the concurrency it survives, floods its replicas with
        queue-length probes until they run out of memory) and the bench goes on without it."""
        try:
            line = self.lines.get(timeout=max(1.0, timeout_s))
        except queue.Empty:
            self.proc.kill()
            return {"stalled": f"no answer from its driver in {timeout_s:.0f} s: killed"}
        if line is None:
            return {"stalled": f"its driver exited ({self.proc.wait()})"}
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("exit")
                self.proc.wait(30)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()


def main() -> None:
    args = bench_args()
    names = args.routers.split(",")
    unknown = [n for n in names if n not in ROUTERS]
    if unknown or "default" not in names:
        raise SystemExit(f"--routers: {unknown or 'default missing'}; known: {', '.join(ROUTERS)}")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    drivers: List[Driver] = []
    try:
        serve.start(proxy_location="Disabled")
        t = time.monotonic()
        for name in names:
            deploy(name, args)
        emit(event="deployed", seconds=round(time.monotonic() - t, 1))
        address = ray.get_runtime_context().gcs_address
        drivers = [Driver(name, address) for name in names]
        ready = {d.name: d.read(180) for d in drivers}  # each warmed up its router
        emit(event="config", args=vars(args), engine=engine_params(args), warm_up=ready)
        start = time.time() + 2.0
        live = [d for d in drivers if "stalled" not in ready[d.name]]
        for d in live:
            d.send(f"go {start}")
        # every request is answered or counted as an error request_timeout_s after its due time
        deadline = start + trace(args)[-1].t * args.time_scale + args.request_timeout_s + 30
        replays = {d.name: ready[d.name] for d in drivers if d not in live}
        replays.update({d.name: d.read(deadline - time.time()) for d in live})
        live = [d for d in live if "stalled" not in replays[d.name]]
        probes: Dict[str, List[float]] = {d.name: [] for d in drivers}
        for _ in range(args.probe_rounds):
            for d in list(live):
                d.send(f"probe {args.probe_batch}")
                got = d.read(60)
                if "stalled" in got:
                    live.remove(d)
                probes[d.name].extend(got.get("seconds", []))
        for name, row in summarise(replays, probes, args).items():
            emit(event="router", router=name, **row)
        emit(event="done")
    finally:
        for d in drivers:
            d.close()
        serve.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()
