"""Workloads of the Ray routing bench, deterministic for a seed: token ids, outputs, arrival times.

- ``groups``: groups of requests sharing a system prompt, each with a unique question (Poisson
  arrivals), plus multi-turn sessions on the same system prompts whose context grows each turn
  (turn k's prompt is turn k-1's prompt, its answer and a new question; think time between turns).
  Token ids are below 30,000 (ray_routing_replica.token_text maps each to one character).
- ``mooncake``: a slice of a Mooncake-format trace (test/fixtures/mooncake/conversation_trace.jsonl):
  each 512-token ``hash_id`` becomes 512 token ids drawn from a generator seeded by the id (equal
  ids give equal tokens, so the trace's prefix sharing is kept), timestamps divided by ``speedup``.

Arrival times are in model seconds from the start (the bench multiplies them by its time scale).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Dict, List

VOCAB = 30_000
MOONCAKE_BLOCK = 512


@dataclass
class TraceRequest:
    t: float
    tokens: List[int]
    output: List[int]
    kind: str


def _tokens(rng: random.Random, n: int) -> List[int]:
    return [rng.randrange(1, VOCAB) for _ in range(n)]


def groups_workload(seed: int = 1, requests: int = 300, rate: float = 10.0, groups: int = 8,
                    system_tokens: int = 2048, sessions: int = 24, turns: int = 8, think_s: float = 2.0,
                    question: tuple = (64, 512), output: tuple = (16, 96)) -> List[TraceRequest]:
    """``requests`` in all at ``rate`` requests/s on average: ``sessions`` sessions of 2..``turns``
    turns, the rest single questions spread as a Poisson process over the same span."""
    rng = random.Random(seed)
    span = requests / rate
    systems = [_tokens(rng, system_tokens) for _ in range(groups)]
    out: List[TraceRequest] = []

    def ask() -> List[int]:
        return _tokens(rng, rng.randint(*question))

    def answer() -> List[int]:
        return _tokens(rng, rng.randint(*output))

    for _ in range(sessions):
        prompt = systems[rng.randrange(groups)] + ask()
        t = rng.uniform(0, span * 0.7)
        for _turn in range(rng.randint(2, turns)):
            if t > span:
                break
            reply = answer()
            out.append(TraceRequest(t, prompt, reply, "session"))
            prompt = prompt + reply + ask()
            t += rng.expovariate(1.0 / think_s)
    singles = max(0, requests - len(out))
    for _ in range(singles):
        out.append(TraceRequest(rng.uniform(0, span), systems[rng.randrange(groups)] + ask(), answer(), "group"))
    out.sort(key=lambda r: r.t)
    return out


def mooncake_workload(path: str, offset: int = 0, requests: int = 200, speedup: float = 1.0,
                      max_input: int = 32_768, max_output: int = 128) -> List[TraceRequest]:
    """``requests`` lines from line ``offset`` (times from the first of them), prompts over
    ``max_input`` tokens dropped, outputs capped at ``max_output`` tokens (decode time is not
    what the routers differ on; the cap keeps the run short)."""
    blocks: Dict[int, List[int]] = {}

    def block(h: int) -> List[int]:
        if h not in blocks:
            blocks[h] = _tokens(random.Random(h * 7919 + 17), MOONCAKE_BLOCK)
        return blocks[h]

    out: List[TraceRequest] = []
    t0 = None
    with open(path) as f:
        for i, line in enumerate(f):
            if i < offset or not line.strip():
                continue
            j = json.loads(line)
            if j["input_length"] > max_input:
                continue
            t0 = j["timestamp"] if t0 is None else t0
            tokens = [t for h in j["hash_ids"] for t in block(h)][:j["input_length"]]
            n_out = max(1, min(max_output, j["output_length"]))
            out.append(TraceRequest((j["timestamp"] - t0) / 1000.0 / speedup, tokens,
                                    _tokens(random.Random(i), n_out), "mooncake"))
            if len(out) >= requests:
                break
    out.sort(key=lambda r: r.t)
    return out
