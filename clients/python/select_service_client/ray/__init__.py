"""select-service as a Ray Serve request router (needs Ray; aiohttp is used when installed).

- :class:`SelectServiceRouter`: ``RequestRouterConfig(request_router_class=SelectServiceRouter,
  request_router_kwargs={"select_service_url": ...})``.
- :func:`report_prefill_complete`, :func:`report_output_block`: called by a replica that streams.
- :func:`worker_id_for_replica`, :func:`selection_id_for`: the ids both sides use.

The guide is docs/ray-serve.md in the select-service repository.
"""
from ._ids import selection_id_for, worker_id_for_replica, worker_record
from ._settings import RouterSettings
from .replica import ReplicaReporter, current_reservation_id, report_output_block, report_prefill_complete
from ._live import routers
from .router import SelectServiceRouter

__all__ = [
    "ReplicaReporter", "RouterSettings", "SelectServiceRouter", "current_reservation_id", "report_output_block",
    "report_prefill_complete", "routers", "selection_id_for", "worker_id_for_replica", "worker_record",
]
