"""KV-cache-aware routing from a Ray Serve deployment (or any Python router) with select-service.

NOT TESTED: Ray is not installed where this repository's tests run, so this file is only checked
for syntax. The client it uses (clients/python, package ``select_service_client``) is tested
against real service processes by ``npm test``.

The flow for each request, as select-service expects it:

1. ``/select`` (with a selection id): which worker, without booking load yet;
2. send the request to that worker;
3. book it: ``POST /reservations`` with only the selection id (replay of step 1); if the service
   answers 404 (the selection expired, or another selector replica answered step 1), the
   explicit form with the chosen worker and the same prompt;
4. ``prefill_complete`` at the first token, ``output_block`` every ``block_size`` generated tokens;
5. ``DELETE /reservations/{id}`` at the end, also when anything failed.

``client.booking(...)`` does 1, 3 and 5 (5 on every way out of the ``with`` block); the router
does 2 and 4. Use ``client.reserved_booking(...)`` to book in step 1 already (``/select_and_reserve``)
when the worker call can start right away.

Run (with Ray Serve installed, workers registered in select-service, a tokenizer of your model)::

    SELECT_SERVICE_URL=http://select-service:8092 serve run examples.ray_serve_router:app
"""
from __future__ import annotations

import asyncio
import json
import os
import threading
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Optional

from select_service_client import SelectServiceClient, SelectServiceError

SELECT_SERVICE_URL = os.environ.get("SELECT_SERVICE_URL", "http://127.0.0.1:8092")
MODEL_NAME = os.environ.get("MODEL_NAME", "llama")


class KvAwareRouter:
    """Routes one request at a time per thread; framework-free (the Ray wrapper is below)."""

    def __init__(self, base_url: str, model_name: str, tokenize: Callable[[str], List[int]],
                 token: Optional[str] = None) -> None:
        self.base_url = base_url
        self.model_name = model_name
        self.tokenize = tokenize
        self.token = token
        # a client keeps one connection and serializes its calls: one client per thread
        self._local = threading.local()

    @property
    def client(self) -> SelectServiceClient:
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = SelectServiceClient(self.base_url, timeout=30, token=self.token)
        return client

    def generate(self, prompt: str, max_tokens: int = 256, session_id: Optional[str] = None) -> Iterator[str]:
        """Streams the completion of ``prompt`` from the worker select-service picks."""
        token_ids = self.tokenize(prompt)
        with self.client.booking(model_name=self.model_name, token_ids=token_ids, session_id=session_id,
                                 expected_output_tokens=max_tokens) as b:
            stream = stream_completion(b.endpoint, prompt, max_tokens)   # 2. call the worker
            b.reserve()                                                  # 3. book (replay, explicit on 404)
            block_size = b.selection.block_size if b.selection else 16
            generated = 0
            for i, piece in enumerate(stream):
                if i == 0:
                    b.prefill_complete()                                 # 4. first token
                generated += 1
                if generated % block_size == 0:
                    b.output_block()                                     # 4. one more KV block
                yield piece
        # 5. freed here, or by the `with` on an exception (worker down, client gone, ...)


def stream_completion(endpoint: str, prompt: str, max_tokens: int) -> Iterator[str]:
    """A vLLM OpenAI-compatible streaming completion (server-sent events), one piece per token."""
    body = json.dumps({"model": MODEL_NAME, "prompt": prompt, "max_tokens": max_tokens, "stream": True}).encode()
    req = urllib.request.Request(f"{endpoint}/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        for raw in resp:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event: Dict[str, Any] = json.loads(line[len("data: "):])
            yield event["choices"][0].get("text", "")


def whitespace_tokenizer(text: str) -> List[int]:
    """Placeholder: route with the model's real tokenizer (the engines' token ids) in production."""
    return [hash(word) & 0x7FFFFFFF for word in text.split()]


try:  # the Ray Serve wrapper, only where Ray is installed
    from ray import serve
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse

    @serve.deployment(num_replicas=2, max_ongoing_requests=64)
    class RouterDeployment:
        def __init__(self) -> None:
            self.router = KvAwareRouter(SELECT_SERVICE_URL, MODEL_NAME, whitespace_tokenizer)

        async def __call__(self, request: Request) -> Any:
            payload = await request.json()
            pieces = self.router.generate(payload["prompt"], int(payload.get("max_tokens", 256)),
                                          payload.get("session_id"))
            try:
                # the client blocks, so it runs off the event loop: the first piece here (selection
                # and booking errors surface before the response starts), the rest in Starlette's
                # thread pool. A client that goes away closes the generator, which frees the booking.
                first = await asyncio.to_thread(next, pieces)
            except SelectServiceError as err:
                # 503: no schedulable worker; 429: a queue limit (err.details says which)
                return JSONResponse({"error": err.error, "details": err.details}, status_code=err.status or 502)

            def rest() -> Iterator[str]:
                yield first
                yield from pieces

            return StreamingResponse(rest(), media_type="text/plain")

    app = RouterDeployment.bind()
except ImportError:  # plain Python: use KvAwareRouter directly
    pass
