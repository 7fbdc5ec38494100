"""Fake engines for the Ray Serve tests (replicas import this module: the test puts this folder on
PYTHONPATH before ``ray.init``).

``FakeEngine`` streams tokens like an LLM server and reports its lifecycle with the replica helper.
With ``kv=True`` it also publishes vLLM KV events: msgpack ``KVEventBatch`` ``[ts, [BlockStored
...], dp_rank]`` (vLLM 0.26's array batch with map events) on a ZMQ PUB as the frames ``topic``,
``seq`` (8 bytes big-endian), ``payload`` (vLLM's ``ZmqEventPublisher``), and advertises the
endpoint in ``record_routing_stats()`` under Ray Serve LLM's ``kv_event_metadata`` key.
"""
from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any, Dict, List, Optional

import ray
from ray import serve

from select_service_client.ray import report_output_block, report_prefill_complete

BLOCK = 16


@ray.remote(num_cpus=0)
class Gate:
    """Holds requests until the test opens their key."""

    def __init__(self) -> None:
        self.events: Dict[str, asyncio.Event] = {}

    async def wait(self, key: str) -> None:
        await self.events.setdefault(key, asyncio.Event()).wait()

    async def open(self, key: str) -> None:
        self.events.setdefault(key, asyncio.Event()).set()


def block_hash(parent: Optional[int], tokens: List[int]) -> int:
    """An engine-side block hash (the service keys its index on its own hash of the tokens)."""
    h = hashlib.blake2b(repr((parent, tokens)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big")


class FakeEngine:
    def __init__(self, url: str, kv: bool = False) -> None:
        self.url = url
        self.uid = serve.get_replica_context().replica_id.unique_id
        self.kv = kv
        self.stored: set = set()
        self.seq = 0
        if kv:
            import zmq

            self.pub = zmq.Context.instance().socket(zmq.PUB)
            self.pub.bind("tcp://127.0.0.1:*")
            self.endpoint = self.pub.getsockopt(zmq.LAST_ENDPOINT).decode()

    def record_routing_stats(self) -> Dict[str, Any]:
        if self.kv:  # Ray Serve LLM's key and fields (get_kv_event_routing_stats)
            return {"kv_event_metadata": {"endpoint": self.endpoint, "block_size": BLOCK, "max_num_batched_tokens": 4096,
                                          "dp_rank": 0}}
        return {"block_size": BLOCK, "max_num_batched_tokens": 4096}

    def _publish(self, token_ids: List[int]) -> None:
        """BlockStored for the prompt's full blocks not stored yet, as the engine's cache fills."""
        import msgpack

        parent: Optional[int] = None
        new_hashes: List[int] = []
        new_tokens: List[int] = []
        new_parent: Optional[int] = None
        for i in range(len(token_ids) // BLOCK):
            block = token_ids[i * BLOCK:(i + 1) * BLOCK]
            h = block_hash(parent, block)
            if h not in self.stored:
                if not new_hashes:
                    new_parent = parent
                self.stored.add(h)
                new_hashes.append(h)
                new_tokens.extend(block)
            parent = h
        if not new_hashes:
            return
        event = {"type": "BlockStored", "block_hashes": new_hashes, "parent_block_hash": new_parent,
                 "token_ids": new_tokens, "block_size": BLOCK, "lora_id": None, "medium": "GPU", "lora_name": None}
        payload = msgpack.packb([time.time(), [event], 0], use_bin_type=True)
        self.pub.send_multipart([b"kv-events", self.seq.to_bytes(8, "big"), payload])
        self.seq += 1

    async def generate(self, prompt: str, request_token_ids: Optional[List[int]] = None, max_tokens: int = 2 * BLOCK,
                       gate: Optional[str] = None):
        """Streams: ``{"replica"}`` first, then (after the gate opens) tokens, then a summary."""
        yield {"replica": self.uid}
        if gate is not None:
            await ray.get_actor("gate", namespace="select-service-tests").wait.remote(gate)
        if self.kv and request_token_ids:
            self._publish(list(request_token_ids))
        prefill = await report_prefill_complete(self.url)
        blocks = 0
        for i in range(1, max_tokens + 1):
            await asyncio.sleep(0)
            if i % BLOCK == 0:
                blocks += int(await report_output_block(self.url))
        yield {"done": True, "prefill_reported": prefill, "blocks_reported": blocks}

    async def __call__(self, prompt: str, request_token_ids: Optional[List[int]] = None, max_tokens: int = 8) -> str:
        await asyncio.sleep(0.005)
        return self.uid
