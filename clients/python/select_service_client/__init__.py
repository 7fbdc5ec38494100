"""Python client of select-service, the KV-cache-aware worker selection service.

Standard library only (Python >= 3.9)::

    from select_service_client import SelectServiceClient

    client = SelectServiceClient("http://selector:8092")
    client.upsert_worker(worker_id=1, model_name="llama", endpoint="http://gpu-1:8000", block_size=16)
    with client.booking(model_name="llama", token_ids=tokens) as b:
        ...  # send the request to b.endpoint
        b.reserve()
        b.prefill_complete()
"""
from .booking import Booking
from .client import DEFAULT_TIMEOUT, POLICY_CLASS_HEADER, SelectServiceClient
from .errors import SelectServiceConnectionError, SelectServiceError, SelectServiceTimeout
from .types import (
    I64_MAX, I64_MIN, U64_MAX, AffinityTarget, BlockExtraInfo, BookingResponse, DumpPartition, KvCacheEvent,
    KvEventData, KvFetchPayload, KvHint, KvHintAction, MmObject, MmRoutingInfo, ModelLoad, OverlapScoreRow,
    OverlapScores, OverlapSummary, PinnedWorker, PotentialLoad, PromptFields, PromptQuery, ReadyResponse,
    ReservationRequest, ReservationResponse, RouterConfigOverride, RouterEvent, RoutingConstraints,
    SelectAndReserveRequest, SelectRequest, SelectResponse, SessionContext, SharedCacheInfo, StoredBlock, WorkerFields,
    WorkerLoad, WorkerPatch, WorkerRecord, WorkerRequest, to_i64, to_u64,
)
from .version import __version__

__all__ = [
    "AffinityTarget", "BlockExtraInfo", "Booking", "BookingResponse", "DEFAULT_TIMEOUT", "DumpPartition", "I64_MAX",
    "I64_MIN", "KvCacheEvent", "KvEventData", "KvFetchPayload", "KvHint", "KvHintAction", "MmObject", "MmRoutingInfo",
    "ModelLoad", "OverlapScoreRow", "OverlapScores", "OverlapSummary", "POLICY_CLASS_HEADER", "PinnedWorker",
    "PotentialLoad", "PromptFields", "PromptQuery", "ReadyResponse", "ReservationRequest", "ReservationResponse",
    "RouterConfigOverride", "RouterEvent", "RoutingConstraints", "SelectAndReserveRequest", "SelectRequest",
    "SelectResponse", "SelectServiceClient", "SelectServiceConnectionError", "SelectServiceError",
    "SelectServiceTimeout", "SessionContext", "SharedCacheInfo", "StoredBlock", "U64_MAX", "WorkerFields", "WorkerLoad",
    "WorkerPatch", "WorkerRecord", "WorkerRequest", "__version__", "to_i64", "to_u64",
]
