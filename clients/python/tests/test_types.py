"""The wire types on their own: encoding, decoding, u64 helpers and the reservation builders."""
from __future__ import annotations

import json
import unittest
from typing import Any

import _support  # noqa: F401  (puts the package on sys.path)

from select_service_client import (
    I64_MIN, U64_MAX, DumpPartition, KvHint, MmRoutingInfo, PinnedWorker, ReservationRequest, RouterConfigOverride,
    BookingResponse, SelectRequest, SelectResponse, SessionContext, WorkerPatch, WorkerRecord, WorkerRequest, to_i64, to_u64,
)

SELECTION = {
    "selection_id": "s-1", "model_name": "m", "routing_group": "g", "worker_id": U64_MAX, "dp_rank": 3,
    "endpoint": "http://w:8000", "block_size": 4, "overlap": {"longest_matched": 8, "gpu": 8, "dp": {"3": 8}, "cpu": 8,
                                                             "disk": 8},
    "effective_prefill_tokens": 1, "potential_decode_blocks": 2, "sequence_hashes": [-1, 0, I64_MIN],
}


class U64(unittest.TestCase):
    def test_conversions(self) -> None:
        self.assertEqual(to_u64(-1), U64_MAX)
        self.assertEqual(to_u64(I64_MIN), 1 << 63)
        self.assertEqual(to_u64(5), 5)
        self.assertEqual(to_i64(U64_MAX), -1)
        self.assertEqual(to_i64(1 << 63), I64_MIN)
        self.assertEqual(to_i64(-7), -7)
        for v in (0, 1, U64_MAX, 1 << 63, (1 << 63) - 1):
            self.assertEqual(to_u64(to_i64(v)), v)
        for bad in (U64_MAX + 1, I64_MIN - 1):
            with self.assertRaises(ValueError):
                to_u64(bad)
            with self.assertRaises(ValueError):
                to_i64(bad)

    def test_json_keeps_every_digit(self) -> None:
        sel = BookingResponse.from_dict(json.loads(json.dumps(SELECTION)))
        self.assertEqual(sel.worker_id, U64_MAX)
        self.assertIsInstance(sel.worker_id, int)
        self.assertEqual(sel.sequence_hashes_u64, [U64_MAX, 0, 1 << 63])

    def test_floats_are_refused_for_integer_fields(self) -> None:
        big: Any = 2.0 ** 64  # what a float makes of U64_MAX
        for request in (WorkerRequest(worker_id=big), SelectRequest(block_hashes=[big]), PinnedWorker(worker_id=big)):
            with self.assertRaises(TypeError):
                request.to_dict()


class Encoding(unittest.TestCase):
    def test_none_fields_are_omitted_and_nested_types_encoded(self) -> None:
        req = SelectRequest(model_name="m", token_ids=[1, 2], session_context=SessionContext("chat-1", session_final=True),
                            router_config_override=RouterConfigOverride(router_temperature=0.5),
                            mm_routing_info=MmRoutingInfo(routing_token_ids=[9], block_mm_infos=[None]),
                            extra={"future_field": 1})
        self.assertEqual(req.to_dict(), {
            "model_name": "m", "token_ids": [1, 2], "mm_routing_info": {"routing_token_ids": [9], "block_mm_infos": [None]},
            "router_config_override": {"router_temperature": 0.5},
            "session_context": {"session_id": "chat-1", "session_final": True}, "future_field": 1,
        })
        self.assertEqual(SelectRequest.from_dict(req.to_dict()), req)

    def test_int_rank_keys_are_sent_as_strings(self) -> None:
        w = WorkerRequest(worker_id=1, kv_events_endpoints={0: "tcp://a:1", 1: "tcp://a:2"})  # type: ignore[dict-item]
        self.assertEqual(w.to_dict()["kv_events_endpoints"], {"0": "tcp://a:1", "1": "tcp://a:2"})
        self.assertEqual(WorkerPatch(total_kv_blocks=7).to_dict(), {"total_kv_blocks": 7})

    def test_a_record_becomes_an_upsert_body(self) -> None:
        rec = WorkerRecord.from_dict({"worker_id": U64_MAX, "model_name": "m", "routing_group": "default",
                                      "endpoint": "http://w:8000", "block_size": 4, "taints": [], "lifecycle": "incomplete",
                                      "not_schedulable_reasons": ["x"], "kv_events": []})
        body = rec.to_request().to_dict()
        self.assertNotIn("lifecycle", body)
        self.assertNotIn("not_schedulable_reasons", body)
        self.assertEqual(body["worker_id"], U64_MAX)
        self.assertEqual(body["kv_events"], [], "fields the client does not know are carried over")


class Decoding(unittest.TestCase):
    def test_kv_hint(self) -> None:
        hint = KvHint.from_dict({
            "protocol_version": "0.1", "message_id": "s-1",
            "actions": [{"action_id": "a1", "action_type": "kv.fetch", "action_version": "1.0",
                         "payload": {"source_control_endpoint": "tcp://w1:7000", "block_hashes": [U64_MAX, 1]}}],
        })
        self.assertEqual(hint.actions[0].payload.block_hashes, [U64_MAX, 1])  # type: ignore[union-attr]
        self.assertEqual(hint.actions[0].payload.source_control_endpoint, "tcp://w1:7000")  # type: ignore[union-attr]
        sel = BookingResponse.from_dict({**SELECTION, "kv_hint": hint.to_dict()})
        self.assertEqual(sel.kv_hint, hint)

    def test_dump_event_kinds(self) -> None:
        part = DumpPartition.from_dict({"block_size": 4, "events": [
            {"worker_id": U64_MAX, "storage_tier": "host_pinned", "event": {"event_id": 0, "dp_rank": 1, "data": {
                "stored": {"parent_hash": None, "start_position": None,
                           "blocks": [{"block_hash": U64_MAX, "tokens_hash": 0, "mm_extra_info": None}]}}}},
            {"worker_id": 2, "event": {"event_id": 1, "data": {"removed": {"block_hashes": [U64_MAX]}}}},
            {"worker_id": 2, "event": {"event_id": 2, "data": "cleared"}},
        ]})
        stored, removed, cleared = part.events
        self.assertEqual((stored.worker_id, stored.storage_tier, stored.event.dp_rank), (U64_MAX, "host_pinned", 1))
        self.assertEqual(stored.event.data.kind, "stored")
        self.assertEqual(stored.event.data.blocks[0].block_hash, U64_MAX)
        self.assertEqual((removed.storage_tier, removed.event.dp_rank), ("device", 0), "defaults of absent fields")
        self.assertEqual(removed.event.data.block_hashes, [U64_MAX])
        self.assertEqual(cleared.event.data.kind, "cleared")
        self.assertEqual(DumpPartition.from_dict({"error": "boom"}).error, "boom")

    def test_missing_required_fields_are_an_error(self) -> None:
        with self.assertRaises(ValueError):
            SelectResponse.from_dict({"worker_id": 1})
        with self.assertRaises(ValueError):
            SelectResponse.from_dict([])  # type: ignore[arg-type]


class Reservations(unittest.TestCase):
    def test_replay_form(self) -> None:
        self.assertEqual(ReservationRequest.replay("s-1", "m").to_dict(), {"selection_id": "s-1", "model_name": "m"})

    def test_explicit_form_copies_the_prompt_and_the_chosen_rank(self) -> None:
        req = SelectRequest(model_name="m", routing_group="g", selection_id="s-1", block_hashes=[1, 2],
                            sequence_hashes=[U64_MAX, 5], isl_tokens=8, lora_name="l", cache_salt="c",
                            expected_output_tokens=64, router_config_override=RouterConfigOverride(track_prefill_tokens=False),
                            session_id="not-sent", priority_jump=2.0)
        sel = SelectResponse.from_dict(SELECTION)
        body = ReservationRequest.explicit(req, sel).to_dict()
        self.assertEqual(body, {
            "selection_id": "s-1", "model_name": "m", "routing_group": "g", "worker_id": U64_MAX, "dp_rank": 3,
            "block_hashes": [1, 2], "sequence_hashes": [U64_MAX, 5], "isl_tokens": 8, "lora_name": "l", "cache_salt": "c",
            "expected_output_tokens": 64, "router_config_override": {"track_prefill_tokens": False},
        })
        with self.assertRaises(ValueError):
            ReservationRequest.explicit(SelectRequest(model_name="m"), SelectResponse.from_dict(
                {k: v for k, v in SELECTION.items() if k != "selection_id"}))


if __name__ == "__main__":
    unittest.main()
