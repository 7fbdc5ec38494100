"""The router's ``request_router_kwargs``, checked (internal).

Serve passes ``RequestRouterConfig.request_router_kwargs`` to ``initialize_state``
(python/ray/serve/_private/router.py); Serve requires them to be JSON, so callables are named
by import path. A bad value raises ``ValueError`` naming the kwarg and what to give instead.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any, Dict, Optional

from .._aio_transport import TRANSPORTS, TRANSPORTS_TEXT

URL_ENV = "SELECT_SERVICE_URL"


@dataclass(frozen=True)
class RouterSettings:
    """Every kwarg of :class:`SelectServiceRouter`, with its default (docs/ray-serve.md)."""

    select_service_url: Optional[str] = None
    """Base URL of select-service; default: the ``SELECT_SERVICE_URL`` environment variable."""
    model_name: Optional[str] = None
    """Partition of the deployment's workers; default: the deployment's name."""
    routing_group: Optional[str] = None
    """Routing group inside the model; default: the service's (``"default"``)."""
    token: Optional[str] = None
    """Bearer token for a service started with ``--auth-token-file``."""
    timeout_s: float = 0.05
    """Deadline of a selection; past it the request takes Serve's default choice."""
    control_timeout_s: float = 5.0
    """Deadline of the calls off the request path (workers, frees, moves)."""
    retry_after_s: float = 1.0
    """After a failed call, how long requests skip the service before it is tried again."""
    booking_ttl_s: float = 3600.0
    """A booking whose completion never came is freed after this long."""
    token_ids_kwarg: str = "request_token_ids"
    """The request keyword argument holding the prompt's token ids (Ray Serve LLM's name)."""
    token_ids_extractor: Optional[str] = None
    """``"module:function"`` taking the PendingRequest and returning its token ids (wins over the kwarg)."""
    block_size: int = 16
    """Block size registered for replicas whose routing_stats have none (vLLM's default, 16)."""
    policy_class: Optional[str] = None
    """Sent as ``x-dynamo-meta-policy-class`` with every selection."""
    transport: str = "asyncio"
    """``asyncio`` (the client's stdlib HTTP/1.1 over asyncio), ``aiohttp``, ``auto`` (aiohttp when
    installed) or ``thread``. The default measured fastest in the router (bench/RESULTS.md)."""

    @classmethod
    def from_kwargs(cls, kwargs: Dict[str, Any], default_model: str) -> "RouterSettings":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise ValueError(f"SelectServiceRouter: unknown request_router_kwargs {unknown}; known: {sorted(known)}")
        values = dict(kwargs)
        values.setdefault("select_service_url", os.environ.get(URL_ENV))
        if not values["select_service_url"]:
            raise ValueError("SelectServiceRouter needs request_router_kwargs={'select_service_url': 'http://host:port'} "
                             f"(or the {URL_ENV} environment variable in every process that holds a handle)")
        if not values.get("model_name"):
            values["model_name"] = default_model
        settings = cls(**values)
        settings._check()
        return settings

    def _check(self) -> None:
        for name in ("timeout_s", "control_timeout_s", "retry_after_s", "booking_ttl_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"SelectServiceRouter: {name} must be a number of seconds above 0 (got {value!r})")
        if type(self.block_size) is not int or self.block_size <= 0:
            raise ValueError(f"SelectServiceRouter: block_size must be a positive int (got {self.block_size!r})")
        for name in ("select_service_url", "model_name", "routing_group", "token", "policy_class", "token_ids_kwarg",
                     "token_ids_extractor"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"SelectServiceRouter: {name} must be a string (got {value!r})")
        if self.transport not in TRANSPORTS:
            raise ValueError(f"SelectServiceRouter: transport must be {TRANSPORTS_TEXT} (got {self.transport!r})")
