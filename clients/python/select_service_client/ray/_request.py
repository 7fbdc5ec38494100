"""What the router reads from a Serve ``PendingRequest`` (internal): token ids, output length, session.

Conventions are Ray Serve LLM's: the prompt's token ids in the ``request_token_ids`` keyword
argument (``REQUEST_TOKEN_IDS_KWARG`` in python/ray/llm/_internal/serve/routing_policies/kv_aware/
constants.py) and the output cap in ``max_completion_tokens`` / ``max_tokens`` of the first
positional argument (``_get_expected_output_tokens`` in .../kv_aware/kv_aware_router.py).
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, List, Optional, Union

Extractor = Callable[[Any], Optional[List[int]]]

_OUTPUT_FIELDS = ("max_completion_tokens", "max_tokens")
_U32 = 0xFFFFFFFF


def load_extractor(spec: Union[None, str, Extractor]) -> Optional[Extractor]:
    """A callable, or ``"package.module:function"`` (request_router_kwargs must be JSON, so a
    deployment names its extractor by import path). The function takes the ``PendingRequest``."""
    if spec is None or callable(spec):
        return spec
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise ValueError(f"token_ids_extractor must be 'module:function' (got {spec!r})")
    module_name, attr = spec.split(":")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"token_ids_extractor {spec!r} cannot be imported: {err}") from err
    if not callable(fn):
        raise ValueError(f"token_ids_extractor {spec!r} is not callable")
    return fn


def as_token_ids(value: Any) -> Optional[List[int]]:
    """A non-empty list of u32 ints, or None (numpy arrays and tuples are accepted)."""
    if value is None:
        return None
    if hasattr(value, "tolist") and not isinstance(value, list):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not value:
        return None
    for t in value:
        if type(t) is not int or not 0 <= t <= _U32:
            return None
    return value if isinstance(value, list) else list(value)


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def expected_output_tokens(args: List[Any], kwargs: dict) -> Optional[int]:
    """``max_completion_tokens`` or ``max_tokens``: a keyword argument, else a field (or key) of
    the first positional argument; positive ints only."""
    for source in ([kwargs] + ([args[0]] if args else [])):
        for name in _OUTPUT_FIELDS:
            value = _field(source, name)
            if type(value) is int and value > 0:
                return value
    return None
