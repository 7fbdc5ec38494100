"""Figures per router from the drivers' replay rows and probe latencies (ray_routing_driver.py).

- TTFT at the replica: arrival at the replica to the first token, on the engine's nominal clock,
  in model ms (wall / time scale): what the engine model says an H100 would take.
- TTFT at the driver: the request's due time in the trace to the first streamed chunk at the
  driver, wall ms: the engine's time (scaled) plus routing, Serve's dispatch and streaming back.
- hit rate: prompt blocks found in the replica's prefix cache / prompt blocks (full blocks).
- overhead: median over requests of (sent -> first chunk at the driver) - TTFT at the replica,
  wall ms (what lies outside the engine), and its difference to the default router's; probe:
  median latency of a zero-cost request, and its difference to the default router's.
"""
from __future__ import annotations

import statistics
from typing import Any, Dict, List


def pct(values: List[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def engine_figures(engines: Dict[str, List[Dict[str, Any]]]) -> Dict[str, Any]:
    """Busy fraction of each replica over the requests it finished (first to last snapshot)."""
    busy, lag = [], 0.0
    for first, last in engines.values():
        span = last["uptime_s"] - first["uptime_s"]
        busy.append(round((last["busy_s"] - first["busy_s"]) / span, 2) if span > 0 else 0.0)
        lag = max(lag, last["lag_max_s"])
    return {"busy": sorted(busy, reverse=True), "lag_max_ms": round(lag * 1e3, 1),
            "evicted_blocks": sum(last["evicted"] for _, last in engines.values())}


def summarise(replays: Dict[str, Dict[str, Any]], probes: Dict[str, List[float]], args: Any) -> Dict[str, Dict[str, Any]]:
    out: Dict[str, Dict[str, Any]] = {}
    for name, rep in replays.items():
        if "stalled" in rep:
            out[name] = {"stalled": rep["stalled"], "requests": 0, "errors": args.requests}
            continue
        ok = [r for r in rep["rows"] if r[1] is not None]
        errors = [r[7] for r in rep["rows"] if r[1] is None]
        replica_ms = [r[3] * 1e3 / args.time_scale for r in ok]
        driver_ms = [r[1] * 1e3 for r in ok]
        per_replica: Dict[str, int] = {}
        for r in ok:
            per_replica[r[7]] = per_replica.get(r[7], 0) + 1
        out[name] = {
            "requests": len(ok), "errors": len(errors), "first_error": errors[0] if errors else None,
            "ttft_replica_ms": {"p50": pct(replica_ms, 0.5), "p90": pct(replica_ms, 0.9), "p99": pct(replica_ms, 0.99)},
            "ttft_driver_ms": {"p50": pct(driver_ms, 0.5), "p90": pct(driver_ms, 0.9)},
            "hit_rate": sum(r[4] for r in ok) / max(1, sum(r[5] for r in ok)),
            "held_p90_ms": pct([r[8] * 1e3 for r in ok], 0.9),
            "queue_p90_model_ms": pct([r[6] * 1e3 / args.time_scale for r in ok], 0.9),
            "overhead_ms": statistics.median((r[2] - r[3]) * 1e3 for r in ok) if ok else float("nan"),
            "probe_p50_ms": statistics.median(probes[name]) * 1e3 if probes.get(name) else float("nan"),
            "requests_per_replica": sorted(per_replica.values(), reverse=True),
            "peak_in_flight": rep["peak_in_flight"], "replay_s": rep["seconds"],
            "router_stats": rep["router_stats"], **engine_figures(rep["engines"]),
        }
    base = out.get("default")
    for row in out.values():
        if base is not None and "stalled" not in row and "stalled" not in base:
            row["overhead_vs_default_ms"] = row["overhead_ms"] - base["overhead_ms"]
            row["probe_vs_default_ms"] = row["probe_p50_ms"] - base["probe_p50_ms"]
    return out
