"""Typed requests and responses of the selection API.

Field names are the wire names. Construct requests with keyword arguments (fields shared by
several requests come from common bases, so positional order is not meant to be relied on).
Every type has an ``extra`` dict: on a response it holds the fields this client does not know
yet (the service adds fields over time); on a request its entries are sent as well.

Integers stay exact: worker ids, ``mm_hash`` and block hashes are Python ints (u64 up to
2**64 - 1). Request ``block_hashes`` / ``sequence_hashes`` may be given signed (i64) or unsigned
(u64); the service reads both bit for bit. Response ``sequence_hashes`` are signed i64, as the
service writes them: :func:`to_u64` converts.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from ._wire import Wire

U64_MAX = (1 << 64) - 1
I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1


def to_u64(value: int) -> int:
    """A signed 64-bit value (e.g. a response ``sequence_hashes`` entry) as its unsigned bits."""
    if not I64_MIN <= value <= U64_MAX:
        raise ValueError(f"{value} is outside the 64-bit range")
    return value & U64_MAX


def to_i64(value: int) -> int:
    """An unsigned 64-bit value as the signed value with the same bits (how the service writes hashes)."""
    if not I64_MIN <= value <= U64_MAX:
        raise ValueError(f"{value} is outside the 64-bit range")
    value &= U64_MAX
    return value - (1 << 64) if value > I64_MAX else value


def _extra() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


# ---- small request parts ---------------------------------------------------------------------


@dataclass
class RouterConfigOverride(Wire):
    """``router_config_override``: per-request cost knobs (the service answers 422 to a bad value)."""

    overlap_score_credit: Optional[float] = None
    prefill_load_scale: Optional[float] = None
    overlap_score_weight: Optional[float] = None
    """Deprecated alias of ``prefill_load_scale`` (0 also zeroes the credit)."""
    router_temperature: Optional[float] = None
    assume_kv_reuse: Optional[bool] = None
    track_prefill_tokens: Optional[bool] = None
    shared_cache_multiplier: Optional[float] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class RoutingConstraints(Wire):
    """``routing_constraints``: hard taint filter and preferred-taint weights."""

    required_taints: Optional[List[str]] = None
    preferred_taints: Optional[Dict[str, float]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class SessionContext(Wire):
    """``session_context`` (wins over the legacy ``session_id``)."""

    session_id: str
    parent_session_id: Optional[str] = None
    session_final: Optional[bool] = None
    input_trigger: Optional[str] = None
    """``user_message``, ``tool_result`` or ``other``."""
    agent_headers: Optional[Dict[str, List[str]]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class AffinityTarget(Wire):
    """``affinity_target``: an exclusive target for the default selector (``dp_rank`` optional)."""

    worker_id: int
    dp_rank: Optional[int] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class PinnedWorker(Wire):
    """``pinned_worker``: an exact worker rank."""

    worker_id: int
    dp_rank: int = 0
    extra: Dict[str, Any] = _extra()


@dataclass
class MmObject(Wire):
    mm_hash: int
    offsets: List[List[int]] = field(default_factory=list)
    extra: Dict[str, Any] = _extra()


@dataclass
class BlockExtraInfo(Wire):
    """Per-block multimodal information."""

    mm_objects: List[MmObject] = field(default_factory=list)
    extra: Dict[str, Any] = _extra()


@dataclass
class MmRoutingInfo(Wire):
    """``mm_routing_info``: routing tokens (win over ``token_ids`` when non-empty)."""

    routing_token_ids: List[int]
    block_mm_infos: Optional[List[Optional[BlockExtraInfo]]] = None
    extra: Dict[str, Any] = _extra()


# ---- prompt requests -------------------------------------------------------------------------


@dataclass
class _Partition(Wire):
    model_name: Optional[str] = None
    """Default ``"default"`` (the service's)."""
    routing_group: Optional[str] = None
    """Default ``"default"``."""


@dataclass
class PromptFields(Wire):
    """The prompt, flattened into every request that takes one: tokens, or the hash trio.

    Precedence on the service: ``mm_routing_info.routing_token_ids`` (non-empty), then
    ``token_ids``, then ``block_hashes`` + ``sequence_hashes`` + ``isl_tokens``.
    """

    token_ids: Optional[List[int]] = None
    mm_routing_info: Optional[MmRoutingInfo] = None
    block_mm_infos: Optional[List[Optional[BlockExtraInfo]]] = None
    block_hashes: Optional[List[int]] = None
    sequence_hashes: Optional[List[int]] = None
    isl_tokens: Optional[int] = None
    lora_name: Optional[str] = None
    cache_salt: Optional[str] = None
    is_eagle: Optional[bool] = None
    extra: Dict[str, Any] = _extra()


PROMPT_FIELDS = tuple(f.name for f in dataclasses.fields(PromptFields) if f.name != "extra")


@dataclass
class PromptQuery(PromptFields, _Partition):
    """Body of ``POST /potential_loads`` and ``POST /overlap_scores``."""

    router_config_override: Optional[RouterConfigOverride] = None


@dataclass
class SelectAndReserveRequest(PromptQuery):
    """Body of ``POST /select_and_reserve`` (without ``selection_id`` the service makes a UUID)."""

    selection_id: Optional[str] = None
    expected_output_tokens: Optional[int] = None
    priority_jump: Optional[float] = None
    strict_priority: Optional[int] = None
    session_id: Optional[str] = None
    session_context: Optional[SessionContext] = None
    affinity_target: Optional[AffinityTarget] = None
    pinned_worker: Optional[PinnedWorker] = None
    allowed_worker_ids: Optional[List[int]] = None
    routing_constraints: Optional[RoutingConstraints] = None


@dataclass
class SelectRequest(SelectAndReserveRequest):
    """Body of ``POST /select``; with ``selection_id`` the choice is cached for a replay reservation."""

    advisory: Optional[bool] = None
    """Select from the current state without queue admission; the response adds ``worker_load``."""


@dataclass
class _SelectionId(Wire):
    selection_id: str


@dataclass
class ReservationRequest(PromptQuery, _SelectionId):
    """Body of ``POST /reservations``.

    Replay form: only ``selection_id`` (plus the partition): books what a ``/select`` with that id
    chose, from the service's cache. Explicit form: ``worker_id`` present, with ``dp_rank`` and the
    prompt fields. See :meth:`replay` and :meth:`explicit`.
    """

    worker_id: Optional[int] = None
    dp_rank: Optional[int] = None
    expected_output_tokens: Optional[int] = None
    effective_prefill_tokens: Optional[int] = None
    track_prefill_tokens: Optional[bool] = None

    @classmethod
    def replay(cls, selection_id: str, model_name: Optional[str] = None,
               routing_group: Optional[str] = None) -> "ReservationRequest":
        """The replay form: books the cached result of ``/select`` with this id."""
        return cls(selection_id=selection_id, model_name=model_name, routing_group=routing_group)

    @classmethod
    def explicit(cls, request: SelectAndReserveRequest, selection: "Union[SelectResponse, BookingResponse]",
                 selection_id: Optional[str] = None) -> "ReservationRequest":
        """The explicit form: the chosen worker rank and the same prompt as the selection.

        ``effective_prefill_tokens`` is left to the service (it recomputes it on the chosen worker;
        sending it would also force prefill tracking on).
        """
        sid = selection_id or selection.selection_id or request.selection_id
        if not sid:
            raise ValueError("an explicit reservation needs a selection_id")
        prompt = {name: getattr(request, name) for name in PROMPT_FIELDS}
        return cls(
            selection_id=sid, model_name=selection.model_name, routing_group=selection.routing_group,
            worker_id=selection.worker_id, dp_rank=selection.dp_rank,
            router_config_override=request.router_config_override,
            expected_output_tokens=request.expected_output_tokens, extra=dict(request.extra), **prompt)


# ---- workers -----------------------------------------------------------------------------------


@dataclass
class WorkerFields(Wire):
    """The worker fields a PATCH may change (``None`` = leave unchanged; maps replace wholesale)."""

    endpoint: Optional[str] = None
    kv_events_endpoint: Optional[str] = None
    kv_events_endpoints: Optional[Dict[str, str]] = None
    """``{"<global dp rank>": "tcp://host:port"}``; int keys are sent as strings."""
    replay_endpoint: Optional[str] = None
    block_size: Optional[int] = None
    data_parallel_start_rank: Optional[int] = None
    data_parallel_size: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    max_num_seqs: Optional[int] = None
    """The engine's limit of running requests (vLLM ``--max-num-seqs``), read by the ``ttft`` policy."""
    total_kv_blocks: Optional[int] = None
    stable_routing_id: Optional[str] = None
    is_eagle: Optional[bool] = None
    taints: Optional[List[str]] = None
    topology_domains: Optional[Dict[str, str]] = None
    kv_transfer_domain: Optional[str] = None
    kv_transfer_enforcement: Optional[str] = None
    """``required`` or ``preferred``."""
    kv_transfer_preferred_weight: Optional[float] = None
    router_hint_worker_type: Optional[str] = None
    router_hint_source_control_endpoints: Optional[Dict[str, str]] = None
    kv_event_source_mode: Optional[str] = None
    extra: Dict[str, Any] = _extra()


WorkerPatch = WorkerFields
"""Body of ``PATCH /workers/{worker_id}``."""


@dataclass
class _WorkerIdentity(Wire):
    worker_id: int
    model_name: Optional[str] = None
    routing_group: Optional[str] = None


@dataclass
class WorkerRequest(WorkerFields, _WorkerIdentity):
    """Body of ``POST /workers`` (an upsert: send the whole record)."""


@dataclass
class WorkerRecord(WorkerRequest):
    """A catalog record, as ``/workers``, ``/ready`` and the worker routes answer it."""

    lifecycle: Optional[str] = None
    """``incomplete``, ``schedulable``, ``draining`` or ``unschedulable``."""
    not_schedulable_reasons: List[str] = field(default_factory=list)

    def to_request(self) -> WorkerRequest:
        """The record as an upsert body (without the service-owned fields)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(WorkerRequest)}
        return WorkerRequest(**fields)


@dataclass
class ReadyResponse(Wire):
    """``GET /ready`` (the same body with 200 and 503)."""

    ready: bool
    schedulable_workers: int
    workers: List[WorkerRecord] = field(default_factory=list)
    extra: Dict[str, Any] = _extra()


# ---- selections and reservations ---------------------------------------------------------------


@dataclass
class OverlapSummary(Wire):
    """Matched prompt tokens on the chosen worker: ``gpu`` device tier, ``cpu`` device + host,
    ``disk`` device + host + disk; ``dp`` device tokens per rank (keys are rank strings)."""

    longest_matched: int
    gpu: int
    dp: Dict[str, int]
    cpu: int
    disk: int
    extra: Dict[str, Any] = _extra()


@dataclass
class WorkerLoad(Wire):
    """``worker_load`` of an advisory ``/select``."""

    active_prefill_tokens: int
    prefill_token_capacity: Optional[int] = None
    total_kv_blocks: Optional[int] = None
    prefill_busy: Optional[bool] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class KvFetchPayload(Wire):
    source_control_endpoint: Optional[str] = None
    block_hashes: List[int] = field(default_factory=list)
    """u64 engine sequence hashes, root-aligned."""
    extra: Dict[str, Any] = _extra()


@dataclass
class KvHintAction(Wire):
    action_id: str
    action_type: str
    """``kv.fetch`` today."""
    action_version: Optional[str] = None
    payload: Optional[KvFetchPayload] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class KvHint(Wire):
    """``kv_hint`` of a booking: where the booked worker can fetch KV it lacks."""

    protocol_version: str
    message_id: str
    actions: List[KvHintAction] = field(default_factory=list)
    extra: Dict[str, Any] = _extra()


@dataclass
class _Selection(Wire):
    """What ``POST /select`` and ``POST /select_and_reserve`` both answer: the chosen worker rank
    and its overlap. ``decode_busy`` only with the decode-busy threshold configured."""

    model_name: str
    routing_group: str
    worker_id: int
    dp_rank: int
    endpoint: str
    block_size: int
    overlap: OverlapSummary
    effective_prefill_tokens: int
    potential_decode_blocks: int
    selection_id: Optional[str] = None
    decode_busy: Optional[bool] = None


@dataclass
class SelectResponse(_Selection):
    """``POST /select``: the chosen worker, nothing booked. ``selection_id`` is echoed when the
    request had one; ``worker_load`` only from an advisory select."""

    worker_load: Optional[WorkerLoad] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class BookingResponse(_Selection):
    """``POST /select_and_reserve``: the chosen worker and its booking. ``sequence_hashes`` are the
    booked tracking hashes as signed i64; ``kv_hint`` only when another worker can serve the prefix."""

    sequence_hashes: Optional[List[int]] = None
    isl_tokens: Optional[int] = None
    track_prefill_tokens: Optional[bool] = None
    kv_hint: Optional[KvHint] = None
    extra: Dict[str, Any] = _extra()

    @property
    def sequence_hashes_u64(self) -> Optional[List[int]]:
        """``sequence_hashes`` as unsigned 64-bit values."""
        return None if self.sequence_hashes is None else [to_u64(h) for h in self.sequence_hashes]


@dataclass
class ReservationResponse(Wire):
    """``POST /reservations`` (201): the booking."""

    selection_id: str
    model_name: str
    routing_group: str
    worker_id: int
    dp_rank: int
    endpoint: str
    extra: Dict[str, Any] = _extra()


# ---- loads and overlap -------------------------------------------------------------------------


@dataclass
class PotentialLoad(Wire):
    """Load of one worker rank (current in ``/loads``; with the prompt added in ``/potential_loads``)."""

    worker_id: int
    dp_rank: int
    potential_prefill_tokens: int
    potential_decode_blocks: int
    active_requests: int
    extra: Dict[str, Any] = _extra()


@dataclass
class ModelLoad(Wire):
    """One partition of ``GET /loads``."""

    model_name: str
    routing_group: str
    loads: List[PotentialLoad] = field(default_factory=list)
    pending_count: int = 0
    """Selections waiting in the router queue."""
    pending_isl_tokens: int = 0
    extra: Dict[str, Any] = _extra()


@dataclass
class OverlapScoreRow(Wire):
    worker_id: int
    dp_rank: int
    device_blocks: int
    host_pinned_blocks: int
    disk_blocks: int
    host_pinned_extension_blocks: int
    disk_extension_blocks: int
    shared_beyond_device_blocks: Optional[int] = None
    router_credit_blocks: float = 0.0
    extra: Dict[str, Any] = _extra()


@dataclass
class SharedCacheInfo(Wire):
    enabled: bool
    total_hit_blocks: int = 0
    ranges: List[List[int]] = field(default_factory=list)
    error: Optional[str] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class OverlapScores(Wire):
    """``POST /overlap_scores``: one row per schedulable worker rank, sorted by (worker_id, dp_rank)."""

    block_size: int
    num_blocks: int
    workers: List[OverlapScoreRow]
    shared_cache: SharedCacheInfo
    extra: Dict[str, Any] = _extra()


# ---- /dump -------------------------------------------------------------------------------------


@dataclass
class StoredBlock(Wire):
    block_hash: int
    tokens_hash: int
    mm_extra_info: Optional[BlockExtraInfo] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class KvEventData(Wire):
    """The ``data`` of a KV event: ``kind`` is ``stored``, ``removed``, ``cleared`` (or a newer kind,
    kept in ``raw``)."""

    kind: str
    parent_hash: Optional[int] = None
    start_position: Optional[int] = None
    blocks: List[StoredBlock] = field(default_factory=list)
    block_hashes: List[int] = field(default_factory=list)
    raw: Any = None
    extra: Dict[str, Any] = _extra()

    @classmethod
    def from_wire(cls, value: Any) -> "KvEventData":
        if isinstance(value, str):
            return cls(kind=value, raw=value)
        if isinstance(value, dict) and len(value) == 1:
            ((kind, body),) = value.items()
            if kind == "stored" and isinstance(body, dict):
                return cls(kind=kind, parent_hash=body.get("parent_hash"), start_position=body.get("start_position"),
                           blocks=[StoredBlock.from_dict(b) for b in body.get("blocks") or []], raw=value)
            if kind == "removed" and isinstance(body, dict):
                return cls(kind=kind, block_hashes=list(body.get("block_hashes") or []), raw=value)
            return cls(kind=str(kind), raw=value)
        raise ValueError(f"KvEventData: unexpected value {value!r}")

    def to_dict(self) -> Dict[str, Any]:
        return self.raw if isinstance(self.raw, dict) else {"kind": self.kind}


@dataclass
class KvCacheEvent(Wire):
    event_id: int
    data: KvEventData
    dp_rank: int = 0
    extra: Dict[str, Any] = _extra()


@dataclass
class RouterEvent(Wire):
    """One ``/dump`` event (the recovery format): a worker rank's stored blocks on a tier."""

    worker_id: int
    event: KvCacheEvent
    storage_tier: str = "device"
    extra: Dict[str, Any] = _extra()


@dataclass
class DumpPartition(Wire):
    """One ``"model:group"`` entry of ``GET /dump`` (``error`` set when its dump failed)."""

    block_size: Optional[int] = None
    events: List[RouterEvent] = field(default_factory=list)
    error: Optional[str] = None
    extra: Dict[str, Any] = _extra()
