"""CPU time of the processes and threads a routed request crosses (Linux ``/proc``), for the Ray bench.

Wall-clock throughput on a shared 2-core machine swings with the other tenants' load; the CPU
each party spends per request swings much less, and tells where a router's extra cost lands:

- ``driver``: the whole driver process (the caller's loop, Serve's router thread, Ray's core
  worker threads);
- ``router-thread``: Serve's router event loop in the driver (every handle's routing, ours
  included, runs on that one thread);
- ``service``: the select-service process;
- ``replicas``: the deployment's replica processes.

Times come from ``schedstat`` (nanoseconds on CPU; ``stat``'s ticks are 10 ms), summed over a
process's threads.
"""
from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, Dict, Iterable, List


def thread_ns(pid: int, tid: int) -> int:
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0  # the thread is gone


def process_ns(pid: int) -> int:
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    return sum(thread_ns(pid, int(tid)) for tid in tids)


def replica_pids(app: str, deployment: str) -> List[int]:
    """The replica processes of ``app``/``deployment`` (Ray titles them ``ray::ServeReplica:app:deployment``)."""
    title = f"ServeReplica:{app}:{deployment}".encode()
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if title in f.read():
                        out.append(int(entry))
            except OSError:
                pass
    return out


def loop_thread_id(loop: asyncio.AbstractEventLoop) -> int:
    """The native id of the thread running ``loop``."""
    return asyncio.run_coroutine_threadsafe(_native_id(), loop).result(timeout=10)


async def _native_id() -> int:
    return threading.get_native_id()


class CpuMeter:
    """Snapshots of the parties' CPU nanoseconds; ``per_request_us`` turns two into µs per request."""

    def __init__(self, service_pid: int, router_tid: int, replicas: Dict[str, List[int]]) -> None:
        self.service_pid, self.router_tid, self.replicas = service_pid, router_tid, replicas

    def snapshot(self, deployment: str) -> Dict[str, int]:
        me = os.getpid()
        snap = {"driver": process_ns(me), "router-thread": thread_ns(me, self.router_tid),
                "replicas": sum(process_ns(p) for p in self.replicas.get(deployment, ()))}
        if self.service_pid:
            snap["service"] = process_ns(self.service_pid)
        return snap

    @staticmethod
    def per_request_us(before: Dict[str, int], after: Dict[str, int], requests: int) -> Dict[str, float]:
        return {k: (after[k] - before[k]) / requests / 1e3 for k in after}


def medians(rows: Iterable[Dict[str, float]]) -> Dict[str, float]:
    rows = list(rows)
    out: Dict[str, Any] = {}
    for key in rows[0] if rows else ():
        values = sorted(r[key] for r in rows)
        out[key] = round(values[len(values) // 2], 1)
    return out
