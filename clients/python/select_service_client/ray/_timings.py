"""Where a routed request's time goes inside the router (internal): medians of the last requests.

Parts (microseconds, per request):

- ``hop``: from the handle's call (``PendingRequest.created_at``) to the router's choice starting,
  i.e. Serve's queueing and the hop to the router's event loop;
- ``answered``: freeing the bookings of requests whose callers have their answers (``_finished``);
- ``encode``: building and JSON-encoding the ``select_and_reserve`` body;
- ``http``: the call as the router's loop sees it (write, the service, the answer, the wake-up),
  with the frees that go in front of it;
- ``choose``: the whole ``choose_replicas`` (all of the above but ``hop``);
- ``rank``: Serve's check of the chosen rank (``_select_from_candidate_replicas``, its queue-length
  cache or a probe of the replica).

Kept for the last 4,096 requests (a few list appends per request); ``SelectServiceRouter.timings()``
reads them, the Ray bench prints them.
"""
from __future__ import annotations

from collections import deque
from typing import Deque, Dict

PARTS = ("hop", "answered", "encode", "http", "choose", "rank")
_KEEP = 4096


class Timings:
    def __init__(self) -> None:
        self._parts: Dict[str, Deque[int]] = {p: deque(maxlen=_KEEP) for p in PARTS}

    def add(self, part: str, ns: int) -> None:
        self._parts[part].append(ns)

    def reset(self) -> None:
        for q in self._parts.values():
            q.clear()

    def medians_us(self) -> Dict[str, float]:
        out: Dict[str, float] = {}
        for part, q in self._parts.items():
            if q:
                values = sorted(q)
                out[part] = round(values[len(values) // 2] / 1e3, 1)
        return out
