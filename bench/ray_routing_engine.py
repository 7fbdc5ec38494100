"""The fake engine of the Ray routing bench: one replica's scheduler, stepped in real time.

After vLLM V1's scheduler (vllm/v1/core/sched/scheduler.py, ``Scheduler.schedule``), as the
simulator's engine (src/sim/engine.ts) models it: each step has a budget of
``max_num_batched_tokens``; running requests go first (a decoding one takes one token, one in
chunked prefill what is left of its prompt up to the budget), then waiting requests in arrival
order while budget remains and fewer than ``max_num_seqs`` run: the prefix cache is looked up and
the request's blocks are reserved (ray_routing_cache.py), or the queue waits there. The step
lasts the simulator's step model (src/sim/perf-model.ts, ``stepMs``; the bench passes the
profile's coefficients) over the scheduled work, times ``time_scale``.

Steps run on a nominal clock: a step starts when the previous one ends (or when work arrives at
an idle engine) and lasts exactly the model's time, and the engine sleeps until that nominal end;
when the event loop wakes it late (a busy machine), the next step still starts at the nominal end,
so jitter does not slow the engine down. ``lag`` records how late the engine was woken.
TTFT = nominal end of the step that computed the last prompt token - arrival at the replica.
"""
from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from ray_routing_cache import PrefixCache, chain_hashes

# (parent hash or None, block hashes, their tokens): one BlockStored
StoredRun = Tuple[Optional[int], List[int], List[int]]


@dataclass
class EngineParams:
    block_size: int
    capacity_blocks: int
    max_num_seqs: int
    max_num_batched_tokens: int
    # src/sim/perf-model.ts StepCost, ms
    fixed_ms: float
    prefill_token_ms: float
    decode_seq_ms: float
    decode_kv_token_ms: float
    time_scale: float = 1.0


@dataclass
class Request:
    tokens: List[int]
    output: List[int]
    arrival: float
    events: "asyncio.Queue[Tuple[str, Any]]"
    hashes: List[int]  # full blocks of tokens + output, filled as they are needed
    hit: int = 0
    computed: int = 0
    generated: int = 0
    stored: int = 0  # blocks of the sequence handled (cached or kept private)
    held: List[int] = field(default_factory=list)
    private: int = 0
    admitted: float = 0.0


class StepEngine:
    def __init__(self, p: EngineParams, on_kv: Callable[[List[int], List[StoredRun]], None]) -> None:
        self.p = p
        self.cache = PrefixCache(p.capacity_blocks)
        self.on_kv = on_kv
        self.waiting: Deque[Request] = deque()
        self.running: List[Request] = []
        self.wake = asyncio.Event()
        self.counters: Dict[str, float] = {"steps": 0, "busy_s": 0.0, "lag_max_s": 0.0, "lag_sum_s": 0.0,
                                           "requests": 0, "hit_blocks": 0, "prompt_blocks": 0}
        self.started = asyncio.get_running_loop().time()
        self.task = asyncio.get_running_loop().create_task(self._loop())

    def submit(self, tokens: List[int], output: List[int]) -> Request:
        """A request arrives now; its queue gets ("first", ttft_s), ("block", n) and ("done", stats)."""
        blocks = -(-(len(tokens) + max(1, len(output))) // self.p.block_size)
        if blocks > self.p.capacity_blocks:  # it could never be admitted
            raise ValueError(f"a request of {blocks} blocks exceeds the replica's {self.p.capacity_blocks}")
        loop = asyncio.get_running_loop()
        r = Request(tokens, output or [0], loop.time(), asyncio.Queue(),
                    chain_hashes(tokens, self.p.block_size))
        self.waiting.append(r)
        self.wake.set()
        return r

    def snapshot(self) -> Dict[str, float]:
        now = asyncio.get_running_loop().time()
        return {**self.counters, "uptime_s": now - self.started, "evicted": self.cache.evicted,
                "cached_blocks": len(self.cache.refs)}

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        t = loop.time()
        while True:
            if not self.running and not self.waiting:
                self.wake.clear()
                await self.wake.wait()
                t = max(t, loop.time())
            plan, seconds = self._plan(t)
            if not plan:  # waiting requests that do not fit: only a finished request frees blocks
                self.wake.clear()
                await self.wake.wait()
                t = max(t, loop.time())
                continue
            end = t + seconds
            delay = end - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            lag = max(0.0, loop.time() - end)
            c = self.counters
            c["steps"] += 1
            c["busy_s"] += seconds
            c["lag_sum_s"] += lag
            c["lag_max_s"] = max(c["lag_max_s"], lag)
            self._apply(plan, end)
            t = end

    def _plan(self, now: float) -> Tuple[List[Tuple[Request, int]], float]:
        p = self.p
        budget = p.max_num_batched_tokens
        plan: List[Tuple[Request, int]] = []
        prefill = decode = kv = 0
        for r in self.running:
            if budget <= 0:
                break
            if r.computed >= len(r.tokens):
                plan.append((r, 1))
                decode += 1
                kv += len(r.tokens) + r.generated
                budget -= 1
            else:
                n = min(len(r.tokens) - r.computed, budget)
                plan.append((r, n))
                prefill += n
                budget -= n
        bs = p.block_size
        while self.waiting and budget > 0 and len(self.running) < p.max_num_seqs:
            r = self.waiting[0]
            hit = self.cache.match(r.hashes, (len(r.tokens) - 1) // bs)
            total = -(-(len(r.tokens) + len(r.output)) // bs)
            if not self.cache.admit(r.hashes, hit, total - hit):
                break
            self.waiting.popleft()
            r.hit, r.computed, r.stored, r.held, r.private, r.admitted = hit, hit * bs, hit, r.hashes[:hit], total - hit, now
            self.running.append(r)
            n = min(len(r.tokens) - r.computed, budget)
            plan.append((r, n))
            prefill += n
            budget -= n
        ms = p.fixed_ms + p.prefill_token_ms * prefill + p.decode_seq_ms * decode + p.decode_kv_token_ms * kv
        return plan, ms * p.time_scale / 1000.0

    def _apply(self, plan: List[Tuple[Request, int]], end: float) -> None:
        runs: List[StoredRun] = []
        bs = self.p.block_size
        for r, n in plan:
            if r.computed < len(r.tokens):
                r.computed += n
                if r.computed == len(r.tokens):
                    r.generated = 1  # the step that computes the last prompt token samples the first
                    r.events.put_nowait(("first", end - r.arrival))
            else:
                r.generated += 1
            # a token that grows the context (prompt + output) into a new block opens it, as
            # Dynamo's router counts output blocks
            if r.generated > 0 and (len(r.tokens) + r.generated - 1) % bs == 0:
                r.events.put_nowait(("block", (len(r.tokens) + r.generated - 1) // bs - (len(r.tokens) - 1) // bs))
            self._store(r, r.computed + max(0, r.generated - 1), runs)
            if r.generated >= len(r.output):
                self._finish(r, end)
        removed = self.cache.take_removed()
        if removed or runs:
            self.on_kv(removed, runs)

    def _store(self, r: Request, kv_tokens: int, runs: List[StoredRun]) -> None:
        """Caches the sequence's blocks that became full (runs of new ones become BlockStored)."""
        bs = self.p.block_size
        full = kv_tokens // bs
        if full <= r.stored:
            return
        seq = r.tokens + r.output[:max(0, r.generated - 1)]
        if len(r.hashes) < full:
            r.hashes.extend(chain_hashes(seq[:full * bs], bs, r.hashes[-1] if r.hashes else None, len(r.hashes) * bs))
        run: Optional[StoredRun] = None
        for b in range(r.stored, full):
            h = r.hashes[b]
            if self.cache.store(h):
                r.held.append(h)
                r.private -= 1
                if run is None:
                    run = (r.hashes[b - 1] if b > 0 else None, [], [])
                    runs.append(run)
                run[1].append(h)
                run[2].extend(seq[b * bs:(b + 1) * bs])
            else:
                run = None
        r.stored = full

    def _finish(self, r: Request, end: float) -> None:
        self.running.remove(r)
        self.cache.release(r.held, r.private)
        c = self.counters
        c["requests"] += 1
        c["hit_blocks"] += r.hit
        c["prompt_blocks"] += len(r.tokens) // self.p.block_size
        r.events.put_nowait(("done", {"hit_blocks": r.hit, "prompt_blocks": len(r.tokens) // self.p.block_size,
                                      "queue_s": r.admitted - r.arrival, "e2e_s": end - r.arrival}))
        self.wake.set()  # blocks were freed: a waiting request may fit now
