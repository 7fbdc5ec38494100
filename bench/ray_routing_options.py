"""Options of the Ray routing bench (one parser for the bench and its driver processes), the
engine parameters they give and the trace they select."""
from __future__ import annotations

import argparse
import json
import os
from typing import Any, Dict, List

from ray_routing_trace import TraceRequest, groups_workload, mooncake_workload

ROUTERS = ("select-kv", "select-approx", "ray-prefix", "default")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# src/sim/perf-model.ts 'llama3.1-8b-h100' (bench/ray-routing.bench.ts passes the profile it reads
# from there with --profile; this copy is for running the Python by hand)
H100_PROFILE = {"fixedMs": 5.752705191348184, "prefillTokenMs": 0.01725086436834028,
                "decodeSeqMs": 0.005999143920128404,
                "decodeKvTokenMs": 0.0004941120550644942 * (131_072 / 819_200) * (2.039 / 3.35)}


def bench_args(argv: List[str] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Ray Serve routing bench (bench/ray_routing_bench.py)")
    ap.add_argument("--routers", default=",".join(ROUTERS))
    ap.add_argument("--workload", choices=("groups", "mooncake"), default="groups")
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--rate", type=float, default=14.0, help="groups: requests per model second")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mooncake-offset", type=int, default=0)
    ap.add_argument("--mooncake-speedup", type=float, default=1.0)
    ap.add_argument("--time-scale", type=float, default=2.5, help="wall seconds per model second")
    ap.add_argument("--replicas", type=int, default=4)
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--capacity-blocks", type=int, default=2048)
    ap.add_argument("--max-num-seqs", type=int, default=64)
    ap.add_argument("--max-num-batched-tokens", type=int, default=8192)
    ap.add_argument("--profile", default=json.dumps(H100_PROFILE), help="StepCost JSON (src/sim/perf-model.ts)")
    ap.add_argument("--max-routing", default="ray-prefix=1",
                    help="router=N,...: requests a router's driver lets be routed at once (0: no cap)")
    ap.add_argument("--request-timeout-s", type=float, default=30.0,
                    help="a request not answered this long after its due time is counted as an error")
    ap.add_argument("--select-timeout-s", type=float, default=None, help="SelectServiceRouter timeout_s")
    ap.add_argument("--probe-rounds", type=int, default=10)
    ap.add_argument("--probe-batch", type=int, default=20)
    ap.add_argument("--app", help=argparse.SUPPRESS)
    ap.add_argument("--address", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def engine_params(args: argparse.Namespace) -> Dict[str, Any]:
    cost = json.loads(args.profile)
    return {"block_size": args.block_size, "capacity_blocks": args.capacity_blocks, "max_num_seqs": args.max_num_seqs,
            "max_num_batched_tokens": args.max_num_batched_tokens, "fixed_ms": cost["fixedMs"],
            "prefill_token_ms": cost["prefillTokenMs"], "decode_seq_ms": cost["decodeSeqMs"],
            "decode_kv_token_ms": cost["decodeKvTokenMs"], "time_scale": args.time_scale}


def max_routing(args: argparse.Namespace, router: str) -> int:
    for item in filter(None, args.max_routing.split(",")):
        name, _, n = item.partition("=")
        if name == router:
            return int(n)
    return 0


def trace(args: argparse.Namespace) -> List[TraceRequest]:
    if args.workload == "mooncake":
        return mooncake_workload(os.path.join(ROOT, "test/fixtures/mooncake/conversation_trace.jsonl"),
                                 args.mooncake_offset, args.requests, args.mooncake_speedup,
                                 # half a replica's cache, and within the approximate-mode service's
                                 # --max-prompt-blocks (4,096 blocks: docs/limits.md)
                                 max_input=min(args.capacity_blocks // 2, 4096) * args.block_size)
    return groups_workload(args.seed, args.requests, args.rate)
