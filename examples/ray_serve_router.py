"""A Ray Serve app routed by select-service: ``SelectServiceRouter`` picks the engine replica.

The engine here is a fake that streams tokens (swap in your vLLM/SGLang deployment); everything
else is what a real deployment does:

- the deployment names the router in ``RequestRouterConfig`` (select-service's URL in the kwargs);
- callers pass the prompt's token ids as ``request_token_ids`` (Ray Serve LLM's convention) and
  ``max_tokens``; the router books the request with one ``POST /select_and_reserve`` and frees it
  when the call completes;
- each replica publishes its block size (and, with a real engine, its KV-events endpoint) in
  ``record_routing_stats()``, and reports the first token and every output block from the stream.

Run it (select-service on 127.0.0.1:8092 without KV events: ``DYN_ROUTER_USE_KV_EVENTS=false
npm start``; Python with ``pip install "ray[serve]==2.58.0" ./clients/python``)::

    SELECT_SERVICE_URL=http://127.0.0.1:8092 python examples/ray_serve_router.py

The repository's Ray test (``npm test -- ray``) deploys this app and checks what ``main`` prints.
See docs/ray-serve.md for every option.
"""
from __future__ import annotations

import asyncio
import os
from typing import Any, AsyncIterator, Dict, List, Optional

from ray import serve
from ray.serve.config import RequestRouterConfig

from select_service_client.ray import SelectServiceRouter, report_output_block, report_prefill_complete

BLOCK_SIZE = 16


class FakeStreamingEngine:
    """Streams ``max_tokens`` pieces; reports prefill and output blocks to select-service."""

    def __init__(self, select_service_url: str) -> None:
        self.url = select_service_url
        self.replica = serve.get_replica_context().replica_id.unique_id

    def record_routing_stats(self) -> Dict[str, Any]:
        # a vLLM replica would add "kv_events_endpoint": "tcp://<node ip>:5557" (docs/ray-serve.md)
        return {"block_size": BLOCK_SIZE, "max_num_batched_tokens": 8192}

    async def generate(self, prompt: str, request_token_ids: Optional[List[int]] = None,
                       max_tokens: int = 32) -> AsyncIterator[str]:
        for i in range(max_tokens):
            await asyncio.sleep(0.001)  # the engine's decode step
            if i == 0:
                await report_prefill_complete(self.url)
            elif i % BLOCK_SIZE == 0:
                await report_output_block(self.url)
            yield f"{self.replica}:{i} "


def build_app(select_service_url: str, name: str = "engine", num_replicas: int = 2, timeout_s: float = 0.05) -> Any:
    """The app: the fake engine behind ``SelectServiceRouter``. ``timeout_s`` bounds each call to
    select-service; a request whose booking takes longer goes where Serve's default router sends it."""
    router = RequestRouterConfig(
        request_router_class=SelectServiceRouter,
        request_router_kwargs={"select_service_url": select_service_url, "timeout_s": timeout_s},
        request_routing_stats_period_s=1.0)
    engine = serve.deployment(FakeStreamingEngine, name=name, num_replicas=num_replicas, max_ongoing_requests=64,
                              ray_actor_options={"num_cpus": 0}, request_router_config=router)
    return engine.bind(select_service_url)


def tokenize(text: str) -> List[int]:
    """A stand-in tokenizer (one id per character); use your model's tokenizer, so that the ids
    are the ones the engines cache."""
    return [ord(c) for c in text]


def ask(handle: Any, prompt: str, max_tokens: int = 32) -> str:
    """Streams one completion; returns the replica that generated it."""
    stream = handle.options(stream=True).generate.remote(prompt, request_token_ids=tokenize(prompt),
                                                         max_tokens=max_tokens)
    pieces = list(stream)
    return pieces[-1].split(":")[0]


def main(handle: Any) -> Dict[str, str]:
    """Four questions about one long document: they share its prefix, so they go where it is cached."""
    document = "A long shared system prompt and document. " * 8
    return {q: ask(handle, document + q) for q in ("Summarize it.", "Who wrote it?", "When?", "Why?")}


if __name__ == "__main__":
    import ray

    ray.init(num_cpus=2, include_dashboard=False)
    serve.start(proxy_location="Disabled")
    app = serve.run(build_app(os.environ.get("SELECT_SERVICE_URL", "http://127.0.0.1:8092")), name="example")
    list(app.options(stream=True).generate.remote("warm-up", max_tokens=1))  # a handle's router starts on first use
    for question, replica in main(app).items():
        print(f"{question!r} -> replica {replica}")
    serve.shutdown()
    ray.shutdown()
