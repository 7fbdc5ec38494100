"""Requests whose caller has their answer before Serve tells the router they finished (internal).

Serve tells a router that a request finished from a done-callback that Ray runs on another thread
and that then hops to the router's loop (``_register_completion_callback`` in
python/ray/serve/_private/router.py); the task's completion is even reported after its answer. The
caller's ``.result()`` returns first, so its next request reaches the router while the previous one
still holds its booking: in a Ray test almost every back-to-back repeat of a prompt was selected
that way, the replica holding the prompt looked busy, and the repeat went elsewhere.

So the router also learns it from the caller's side: the ``ReplicaResult`` of an accepted request
(``on_request_routed``) reports, in the caller's thread, when it has handed over the last answer
(``get``/``get_async`` returned, or the stream ended). The router's next selection frees those
bookings in front of itself; Serve's completion, when it comes, then finds nothing to free.
"""
from __future__ import annotations

from typing import Any, Callable

_STOPS = (StopIteration, StopAsyncIteration)


def on_delivered(result: Any, delivered: Callable[[], None]) -> None:
    """Wraps the answer methods of ``result`` (a ``ReplicaResult``; Serve's handle calls them as
    methods) so that ``delivered()`` runs once the caller has the whole answer. Failures and
    timeouts are left to Serve's completion."""
    get, get_async = getattr(result, "get", None), getattr(result, "get_async", None)
    next_, anext_ = getattr(result, "__next__", None), getattr(result, "__anext__", None)
    if get is not None:
        def get_once(*args: Any, **kwargs: Any) -> Any:
            value = get(*args, **kwargs)
            delivered()
            return value
        result.get = get_once
    if get_async is not None:
        async def get_async_once(*args: Any, **kwargs: Any) -> Any:
            value = await get_async(*args, **kwargs)
            delivered()
            return value
        result.get_async = get_async_once
    if next_ is not None:
        def next_item() -> Any:
            try:
                return next_()
            except StopIteration:
                delivered()
                raise
        result.__next__ = next_item
    if anext_ is not None:
        async def anext_item() -> Any:
            try:
                return await anext_()
            except StopAsyncIteration:
                delivered()
                raise
        result.__anext__ = anext_item
