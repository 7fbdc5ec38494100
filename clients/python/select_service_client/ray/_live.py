"""The routers alive in this process (internal).

Serve pickles a custom router's module by value (``RequestRouterConfig._serialize_request_router_cls``
in python/ray/serve/config.py calls ``cloudpickle.register_pickle_by_value``), so module globals
of router.py are copies in the process that runs the router; this set lives here, in a module
imported by reference, so ``routers()`` sees every router of the process.
"""
from __future__ import annotations

import weakref
from typing import Any, List

_ROUTERS: "weakref.WeakSet[Any]" = weakref.WeakSet()


def add(router: Any) -> None:
    _ROUTERS.add(router)


def routers() -> List[Any]:
    """The live ``SelectServiceRouter`` instances of this process (one per deployment handle)."""
    return list(_ROUTERS)
