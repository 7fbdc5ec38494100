"""Names shared by the router and the replica helper: worker ids, selection ids, worker records.

No Ray import here, so the rules can be used (and checked) without Ray.
"""
from __future__ import annotations

import hashlib
from typing import Any, Dict, Mapping, Optional

#: routing_stats keys a replica may publish with ``record_routing_stats()`` (flat form).
FLAT_STATS_KEYS = ("kv_events_endpoint", "replay_endpoint", "block_size", "max_num_batched_tokens", "total_kv_blocks")

#: Ray Serve LLM's routing_stats key: ``{"endpoint", "block_size", "max_num_batched_tokens",
#: "dp_rank", "replay_endpoint"}`` (python/ray/llm/_internal/serve/routing_policies/kv_aware/vllm/
#: kv_events.py, ``get_kv_event_routing_stats``).
RAY_LLM_STATS_KEY = "kv_event_metadata"


def worker_id_for_replica(replica_unique_id: str) -> int:
    """The select-service worker id of a Serve replica: blake2b with an 8-byte digest of the
    replica's unique id, read big-endian (u64).

    This is Ray Serve LLM's rule (``get_worker_id`` in python/ray/llm/_internal/serve/
    routing_policies/kv_aware/kv_token_tracker.py), so a deployment moved between Ray Serve LLM's
    KV-aware router and this one keeps its worker ids. Note: ``digest_size=8`` is blake2b's own
    parameter, not a cut of the 64-byte digest; the two give different numbers.
    """
    return int.from_bytes(hashlib.blake2b(replica_unique_id.encode(), digest_size=8).digest(), "big")


def selection_id_for(app_name: str, deployment: str, internal_request_id: str) -> str:
    """The reservation id the router books a request under, and that the replica helper reports to.

    Serve's ``internal_request_id`` is shared by the calls one parent request makes to other
    deployments, so the deployment is part of the id.
    """
    return f"serve:{app_name}:{deployment}:{internal_request_id}"


def _positive_int(stats: Mapping[str, Any], key: str) -> Optional[int]:
    value = stats.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def worker_record(worker_id: int, replica_full_id: str, routing_stats: Optional[Mapping[str, Any]], *,
                  model_name: str, routing_group: Optional[str], block_size: Optional[int]) -> Dict[str, Any]:
    """The ``POST /workers`` body of one replica.

    ``endpoint`` is ``ray://<full replica id>`` (selections are answered to the router, never
    called over HTTP; Ray Serve LLM registers the same form). From ``routing_stats``: the flat keys
    (:data:`FLAT_STATS_KEYS`) win over Ray Serve LLM's ``kv_event_metadata``. Without a KV-events
    endpoint the worker suits a service in approximate mode (``DYN_ROUTER_USE_KV_EVENTS=false``).
    """
    stats: Mapping[str, Any] = routing_stats or {}
    record: Dict[str, Any] = {"worker_id": worker_id, "model_name": model_name, "endpoint": f"ray://{replica_full_id}"}
    if routing_group is not None:
        record["routing_group"] = routing_group
    meta = stats.get(RAY_LLM_STATS_KEY)
    if isinstance(meta, Mapping):
        rank = meta.get("dp_rank") or 0
        if isinstance(meta.get("endpoint"), str):
            record["kv_events_endpoints"] = {str(rank): meta["endpoint"]}
            record["data_parallel_start_rank"] = rank
            record["data_parallel_size"] = 1
        if isinstance(meta.get("replay_endpoint"), str):
            record["replay_endpoint"] = meta["replay_endpoint"]
        for key in ("block_size", "max_num_batched_tokens"):
            if _positive_int(meta, key) is not None:
                record[key] = meta[key]
    if isinstance(stats.get("kv_events_endpoint"), str):
        record.pop("kv_events_endpoints", None)
        record.pop("data_parallel_start_rank", None)
        record.pop("data_parallel_size", None)
        record["kv_events_endpoint"] = stats["kv_events_endpoint"]
    if isinstance(stats.get("replay_endpoint"), str):
        record["replay_endpoint"] = stats["replay_endpoint"]
    for key in ("block_size", "max_num_batched_tokens", "total_kv_blocks"):
        if _positive_int(stats, key) is not None:
            record[key] = stats[key]
    if "block_size" not in record and block_size is not None:
        record["block_size"] = block_size
    return record
