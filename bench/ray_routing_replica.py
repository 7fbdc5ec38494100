"""The Serve deployment of the Ray routing bench: each replica runs a fake engine
(ray_routing_engine.py) and publishes its cache changes as vLLM KV events.

Replicas import this module (the bench puts bench/ on PYTHONPATH before ``ray.init``).

- ``generate(prompt, request_token_ids=..., max_tokens=..., output_ids=...)`` streams two chunks:
  ``{"ttft_s"}`` when the engine samples the first token, then the request's figures (blocks hit,
  prompt blocks, queueing) and the replica's counters. ``prompt`` is a :class:`Prompt`: Ray's
  ``PrefixCacheAffinityRouter`` reads the ``.prompt`` text of a positional argument;
  ``SelectServiceRouter`` reads the ``request_token_ids`` keyword argument; Serve's default router
  reads neither. ``probe=True`` skips the engine (the bench's routing-overhead pass).
- KV events: vLLM 0.26's msgpack ``KVEventBatch`` ``[ts, [events], dp_rank]`` with map events
  (``BlockRemoved`` first, then ``BlockStored``, as the engine makes them in a step) on a ZMQ PUB
  bound to ``tcp://127.0.0.1:*``, frames ``topic``, ``seq`` (8 bytes big-endian), ``payload``
  (vLLM's ``ZmqEventPublisher``); advertised by ``record_routing_stats()`` as Ray Serve LLM's
  ``kv_event_metadata``.
- With ``report_url`` (the deployments SelectServiceRouter routes) the replica reports the first
  token and each full output block to the service (the client's replica helper).
"""
from __future__ import annotations

import time
from typing import Any, AsyncIterator, Dict, List, Optional

from ray import serve

from ray_routing_engine import EngineParams, StepEngine, StoredRun

TEXT_BASE = 0x3400  # token t is the character chr(TEXT_BASE + t): one character per token


class Prompt:
    """A request's first positional argument: Ray's prefix router matches on ``.prompt``."""

    __slots__ = ("prompt",)

    def __init__(self, prompt: str) -> None:
        self.prompt = prompt


def token_text(token_ids: List[int]) -> str:
    """The prompt text of token ids, one character per token (ids below 0x10000 - TEXT_BASE),
    so that a shared text prefix is exactly a shared token prefix."""
    return "".join(chr(TEXT_BASE + t) for t in token_ids)


class KvPublisher:
    def __init__(self, block_size: int) -> None:
        import zmq

        self.block_size = block_size
        self.sock = zmq.Context.instance().socket(zmq.PUB)
        self.sock.setsockopt(zmq.SNDHWM, 100_000)
        self.sock.bind("tcp://127.0.0.1:*")
        self.endpoint = self.sock.getsockopt(zmq.LAST_ENDPOINT).decode()
        self.seq = 0

    def publish(self, removed: List[int], stored: List[StoredRun]) -> None:
        import msgpack

        events: List[Dict[str, Any]] = []
        if removed:
            events.append({"type": "BlockRemoved", "block_hashes": removed, "medium": "GPU"})
        for parent, hashes, tokens in stored:
            events.append({"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent,
                           "token_ids": tokens, "block_size": self.block_size, "lora_id": None, "medium": "GPU",
                           "lora_name": None})
        payload = msgpack.packb([time.time(), events, 0], use_bin_type=True)
        self.sock.send_multipart([b"kv-events", self.seq.to_bytes(8, "big"), payload])
        self.seq += 1


class RoutingEngine:
    def __init__(self, params: Dict[str, Any], kv_events: bool, report_url: Optional[str] = None) -> None:
        self.params = EngineParams(**params)
        self.uid = serve.get_replica_context().replica_id.unique_id
        self.publisher = KvPublisher(self.params.block_size) if kv_events else None
        self.report_url = report_url
        self.engine: Optional[StepEngine] = None  # made on the first request, on the serving loop

    def record_routing_stats(self) -> Dict[str, Any]:
        p = self.params
        stats: Dict[str, Any] = {"block_size": p.block_size, "max_num_batched_tokens": p.max_num_batched_tokens,
                                 "total_kv_blocks": p.capacity_blocks}
        if self.publisher is not None:  # Ray Serve LLM's key and fields (get_kv_event_routing_stats)
            stats["kv_event_metadata"] = {"endpoint": self.publisher.endpoint, "block_size": p.block_size,
                                          "max_num_batched_tokens": p.max_num_batched_tokens, "dp_rank": 0}
        return stats

    def _on_kv(self, removed: List[int], stored: List[StoredRun]) -> None:
        if self.publisher is not None:
            self.publisher.publish(removed, stored)

    async def generate(self, prompt: Prompt, request_token_ids: Optional[List[int]] = None, max_tokens: int = 1,
                       output_ids: Optional[List[int]] = None, probe: bool = False) -> AsyncIterator[Dict[str, Any]]:
        if probe:
            yield {"ttft_s": 0.0}
            yield {"replica": self.uid}
            return
        if self.engine is None:
            self.engine = StepEngine(self.params, self._on_kv)
        r = self.engine.submit(list(request_token_ids or []), list(output_ids or [1] * max_tokens))
        if self.report_url:
            from select_service_client.ray import report_output_block, report_prefill_complete
        while True:
            kind, value = await r.events.get()
            if kind == "first":
                yield {"ttft_s": value}
                if self.report_url:
                    await report_prefill_complete(self.report_url)
            elif kind == "block":
                if self.report_url:
                    await report_output_block(self.report_url)
            else:
                engine = self.engine.snapshot()
                if self.publisher is not None:
                    engine["kv_batches"] = self.publisher.seq
                yield {**value, "replica": self.uid, "engine": engine}
                return
