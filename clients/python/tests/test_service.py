"""Every method against a real select-service process (``SELECT_SERVICE_URL``; KV events off, so
bookings feed the approximate index; replica sync enabled). Each test uses its own model names and
worker ids: the service is shared by the whole run."""
from __future__ import annotations

import dataclasses
import typing
import unittest
from typing import Any, Dict, List, Optional, Set, Tuple, Type

from _support import SERVICE_URL, needs, toks, unique, unique_id

from select_service_client import (
    I64_MIN, U64_MAX, AffinityTarget, ModelLoad, OverlapScores, PinnedWorker, PotentialLoad, PromptQuery, ReadyResponse,
    ReservationRequest, ReservationResponse, RouterConfigOverride, RoutingConstraints, SelectAndReserveRequest,
    BookingResponse, SelectRequest, SelectResponse, SelectServiceClient, SelectServiceError, SessionContext, WorkerPatch, WorkerRecord,
    WorkerRequest, to_u64,
)
from select_service_client._wire import Wire


@needs(SERVICE_URL, "SELECT_SERVICE_URL")
class ServiceTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = SelectServiceClient(str(SERVICE_URL), timeout=10)
        self.addCleanup(self.client.close)
        self.model = unique("model")

    def worker(self, worker_id: int = 0, **fields: Any) -> WorkerRecord:
        """Registers a schedulable worker in this test's model (block size 4)."""
        wid = worker_id or unique_id()
        rec = self.client.upsert_worker(worker_id=wid, model_name=self.model, endpoint=f"http://worker-{wid}:8000",
                                        block_size=4, **fields)
        self.addCleanup(self.forget, wid)
        return rec

    def forget(self, worker_id: int) -> None:
        try:
            self.client.delete_worker(worker_id)
        except SelectServiceError as err:
            if err.status != 404:
                raise

    def assert_status(self, status: int, fn, *args, **kwargs) -> SelectServiceError:  # type: ignore[no-untyped-def]
        with self.assertRaises(SelectServiceError) as ctx:
            fn(*args, **kwargs)
        self.assertEqual(ctx.exception.status, status, ctx.exception.body)
        self.assertTrue(ctx.exception.error, "the service's error text")
        return ctx.exception

    def active(self) -> List[int]:
        """active_requests of every rank of this test's model."""
        return [load.active_requests for part in self.client.loads(model_name=self.model) for load in part.loads]


class Workers(ServiceTest):
    def test_upsert_list_patch_delete(self) -> None:
        rec = self.worker(taints=["gpu-a"], topology_domains={"zone": "a"}, total_kv_blocks=100,
                          kv_transfer_enforcement="preferred", kv_events_endpoints={0: "tcp://w:5557"})
        self.assertEqual(rec.lifecycle, "schedulable")
        self.assertEqual((rec.model_name, rec.routing_group, rec.block_size), (self.model, "default", 4))
        self.assertEqual((rec.taints, rec.topology_domains, rec.kv_transfer_enforcement), (["gpu-a"], {"zone": "a"}, "preferred"))
        self.assertEqual(rec.kv_events_endpoints, {"0": "tcp://w:5557"})
        self.assertEqual(self.client.list_workers(model_name=self.model), [rec])
        self.assertEqual(self.client.list_workers(model_name=self.model, routing_group="other"), [])

        patched = self.client.patch_worker(rec.worker_id, total_kv_blocks=200, endpoint=None)
        self.assertEqual((patched.total_kv_blocks, patched.endpoint), (200, rec.endpoint), "None leaves a field unchanged")
        gone = self.client.delete_worker(rec.worker_id)
        self.assertEqual(gone.lifecycle, "unschedulable")
        self.assertEqual(self.client.list_workers(model_name=self.model), [])

    def test_worker_errors(self) -> None:
        err = self.assert_status(404, self.client.patch_worker, unique_id(), total_kv_blocks=1)
        self.assertIn("not found", err.error)
        self.assert_status(404, self.client.delete_worker, unique_id())
        self.assert_status(422, self.client.upsert_worker, worker_id=unique_id(), model_name=self.model, block_size=-1)
        self.assert_status(400, self.client.delete_worker, "not-a-number")  # type: ignore[arg-type]

    def test_an_incomplete_worker_says_why(self) -> None:
        wid = unique_id()
        self.addCleanup(self.forget, wid)
        rec = self.client.upsert_worker(worker_id=wid, model_name=self.model, block_size=4)
        self.assertEqual(rec.lifecycle, "incomplete")
        self.assertTrue(any("endpoint" in r for r in rec.not_schedulable_reasons), rec.not_schedulable_reasons)

    def test_u64_worker_id_round_trips(self) -> None:
        rec = self.worker(U64_MAX)
        self.assertEqual(rec.worker_id, U64_MAX)
        self.assertEqual([w.worker_id for w in self.client.list_workers(model_name=self.model)], [U64_MAX])
        sel = self.client.select(model_name=self.model, token_ids=toks(8), pinned_worker=PinnedWorker(U64_MAX, 0),
                                 allowed_worker_ids=[U64_MAX])
        self.assertEqual(sel.worker_id, U64_MAX)
        self.assertEqual(self.client.patch_worker(U64_MAX, total_kv_blocks=1).worker_id, U64_MAX)


class Health(ServiceTest):
    def test_health_ready_openapi(self) -> None:
        rec = self.worker()
        self.assertEqual(self.client.health(), "ok")
        ready = self.client.ready()
        self.assertTrue(ready.ready)
        self.assertGreaterEqual(ready.schedulable_workers, 1)
        self.assertIn(rec, ready.workers)
        doc = self.client.openapi()
        self.assertIn("/select", doc["paths"])
        self.assertIn("/reservations/{id}/output_block", doc["paths"])

    def test_metrics_route(self) -> None:
        # GET /metrics answers Prometheus text once the service serves it, and the client raises the
        # service's 404 before: which one is decided by the service's own route table
        served = "/metrics" in self.client.openapi()["paths"]
        if served:
            text = self.client.metrics()
            self.assertIsInstance(text, str)
            self.assertTrue(text.strip())
        else:
            err = self.assert_status(404, self.client.metrics)
            self.assertEqual(err.error, "route not found")


class Selection(ServiceTest):
    def test_select_then_replay_reservation_and_the_lifecycle(self) -> None:
        rec = self.worker()
        sid = unique("sel")
        sel = self.client.select(model_name=self.model, selection_id=sid, token_ids=toks(8), expected_output_tokens=16)
        self.assertEqual((sel.selection_id, sel.worker_id, sel.dp_rank, sel.endpoint), (sid, rec.worker_id, 0, rec.endpoint))
        self.assertEqual(sel.overlap.dp, {"0": 0})
        self.assertNotIn("sequence_hashes", sel.extra, "only bookings echo sequence_hashes")
        self.assertFalse(hasattr(sel, "sequence_hashes"))
        self.assertEqual(self.active(), [0], "select books nothing")

        booked = self.client.create_reservation(ReservationRequest.replay(sid, self.model))
        self.assertEqual((booked.selection_id, booked.worker_id, booked.dp_rank, booked.endpoint),
                         (sid, rec.worker_id, 0, rec.endpoint))
        self.assertEqual(self.active(), [1])
        [[load]] = [p.loads for p in self.client.loads(model_name=self.model)]
        self.assertEqual(load.potential_prefill_tokens, 8)
        self.client.prefill_complete(sid)
        self.client.prefill_complete(sid)  # idempotent
        [[load]] = [p.loads for p in self.client.loads(model_name=self.model)]
        self.assertEqual(load.potential_prefill_tokens, 0)
        blocks = load.potential_decode_blocks
        self.client.output_block(sid)
        [[load]] = [p.loads for p in self.client.loads(model_name=self.model)]
        self.assertEqual(load.potential_decode_blocks, blocks + 1)
        self.client.output_block(sid, decay_fraction=0.5)
        self.assert_status(400, self.client.output_block, sid, decay_fraction=1.5)
        self.client.free_reservation(sid)
        self.assertEqual(self.active(), [0])
        self.assert_status(404, self.client.free_reservation, sid)
        self.assert_status(404, self.client.create_reservation, selection_id=sid, model_name=self.model)

    def test_select_and_reserve_and_the_explicit_form(self) -> None:
        self.worker()
        sid = unique("sar")
        req = SelectRequest(model_name=self.model, selection_id=sid, token_ids=toks(9), cache_salt="s",
                            session_context=SessionContext("chat-1", input_trigger="user_message"),
                            routing_constraints=RoutingConstraints(preferred_taints={"x": 0.5}),
                            router_config_override=RouterConfigOverride(overlap_score_credit=1.0), priority_jump=1.5,
                            strict_priority=1)
        booked = self.client.select_and_reserve(req)
        self.assertEqual(booked.selection_id, sid)
        self.assertEqual((booked.isl_tokens, booked.track_prefill_tokens), (9, True))
        self.assertEqual(len(booked.sequence_hashes or []), 2)
        self.assertEqual(self.active(), [1])
        err = self.assert_status(409, self.client.select_and_reserve, req)
        self.assertIn(sid, err.error)
        self.client.free_reservation(sid)

        # explicit form: the chosen rank and the same prompt, without the service's cache
        sel = self.client.select(req)
        explicit = ReservationRequest.explicit(req, sel, unique("explicit"))
        res = self.client.create_reservation(explicit)
        self.assertEqual((res.worker_id, res.dp_rank), (sel.worker_id, sel.dp_rank))
        self.assertEqual(self.active(), [1])
        self.client.free_reservation(res.selection_id)

    def test_advisory_select_reports_worker_load(self) -> None:
        self.worker(max_num_batched_tokens=1024, total_kv_blocks=1000)
        sel = self.client.select(model_name=self.model, token_ids=toks(8), advisory=True,
                                 affinity_target=AffinityTarget(worker_id=self.client.list_workers(model_name=self.model)[0].worker_id))
        assert sel.worker_load is not None
        self.assertEqual((sel.worker_load.active_prefill_tokens, sel.worker_load.prefill_token_capacity,
                          sel.worker_load.total_kv_blocks), (0, 1024, 1000))

    def test_hash_form_keeps_u64_extremes_and_signed_sequence_hashes(self) -> None:
        self.worker()
        sid = unique("hash")
        sent = [U64_MAX, I64_MIN]
        booked = self.client.select_and_reserve(model_name=self.model, selection_id=sid, block_hashes=[0, U64_MAX],
                                                 sequence_hashes=sent, isl_tokens=8)
        self.assertEqual(booked.sequence_hashes, [-1, I64_MIN], "the service writes i64")
        self.assertEqual(booked.sequence_hashes_u64, [to_u64(h) for h in sent])
        # the booking fed the approximate index: /dump lists the block hashes as u64
        part = self.client.dump()[f"{self.model}:default"]
        self.assertEqual(part.block_size, 4)
        hashes = [b.tokens_hash for e in part.events if e.event.data.kind == "stored" for b in e.event.data.blocks]
        self.assertEqual(hashes, [0, U64_MAX])
        # and the same prompt now overlaps on that worker
        scores = self.client.overlap_scores(model_name=self.model, block_hashes=[0, U64_MAX], sequence_hashes=sent,
                                            isl_tokens=8)
        self.assertEqual((scores.block_size, scores.num_blocks), (4, 2))
        self.assertEqual([(r.worker_id, r.device_blocks) for r in scores.workers], [(booked.worker_id, 2)])
        self.assertFalse(scores.shared_cache.enabled)
        self.assertIsInstance(scores.workers[0].router_credit_blocks, float)
        self.client.free_reservation(sid)

    def test_potential_loads(self) -> None:
        a, b = self.worker(), self.worker()
        loads = self.client.potential_loads(model_name=self.model, token_ids=toks(8))
        self.assertEqual(sorted(load.worker_id for load in loads), sorted([a.worker_id, b.worker_id]))
        self.assertTrue(all(load.potential_prefill_tokens == 8 and load.active_requests == 0 for load in loads))

    def test_selection_errors(self) -> None:
        self.worker()
        err = self.assert_status(400, self.client.select, model_name=self.model, block_hashes=[1], sequence_hashes=[1])
        self.assertIn("isl_tokens", err.error)
        err = self.assert_status(422, self.client.select, model_name=self.model, token_ids=toks(4),
                                 router_config_override=RouterConfigOverride(router_temperature=-1))
        self.assertIn("router_config_override", err.error)
        err = self.assert_status(503, self.client.select, model_name=unique("nobody"), token_ids=toks(4))
        self.assertIn("no schedulable workers", err.error)
        self.assert_status(404, self.client.create_reservation, selection_id=unique("never"), model_name=self.model)
        self.assert_status(404, self.client.prefill_complete, unique("never"))
        self.assert_status(404, self.client.output_block, unique("never"))


# (path, method, request type, response type) of every route with a typed body
TYPED_ROUTES: List[Tuple[str, str, Optional[Type[Wire]], Type[Wire]]] = [
    ("/workers", "post", WorkerRequest, WorkerRecord),
    ("/workers", "get", None, WorkerRecord),
    ("/workers/{worker_id}", "patch", WorkerPatch, WorkerRecord),
    ("/workers/{worker_id}", "delete", None, WorkerRecord),
    ("/ready", "get", None, ReadyResponse),
    ("/select", "post", SelectRequest, SelectResponse),
    ("/select_and_reserve", "post", SelectAndReserveRequest, BookingResponse),
    ("/reservations", "post", ReservationRequest, ReservationResponse),
    ("/loads", "get", None, ModelLoad),
    ("/potential_loads", "post", PromptQuery, PotentialLoad),
    ("/overlap_scores", "post", PromptQuery, OverlapScores),
]


class OpenApiDocument(ServiceTest):
    """The dataclasses against the service's own document: every field the client declares is a
    documented field (no invented or misspelt names), and the client can send every documented
    request field. Response fields the service documents beyond the dataclasses are allowed (they
    land in ``.extra``)."""

    def setUp(self) -> None:
        super().setUp()
        self.doc = self.client.openapi()

    def resolve(self, schema: Dict[str, Any]) -> Dict[str, Any]:
        """A schema with $ref followed, arrays unwrapped to their items, and the properties of
        allOf/anyOf/oneOf variants merged."""
        while True:
            if "$ref" in schema:
                node: Any = self.doc
                for part in schema["$ref"].lstrip("#/").split("/"):
                    node = node[part]
                schema = node
            elif schema.get("type") == "array" and "items" in schema:
                schema = schema["items"]
            else:
                break
        props = dict(schema.get("properties", {}))
        for key in ("allOf", "anyOf", "oneOf"):
            for variant in schema.get(key, []):
                props.update(self.resolve(variant).get("properties", {}))
        return {"properties": props}

    def fields(self, cls: Type[Wire]) -> Dict[str, Any]:
        hints = typing.get_type_hints(cls)
        return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.name != "extra"}

    @staticmethod
    def wire_type(tp: Any) -> Optional[Type[Wire]]:
        """The wire class inside Optional[...] / List[...], if any."""
        for _ in range(3):
            if isinstance(tp, type) and issubclass(tp, Wire):
                return tp
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if not args:
                return None
            tp = args[-1]
        return None

    def compare(self, schema: Dict[str, Any], cls: Type[Wire], where: str, request: bool, seen: Set[str]) -> None:
        documented = self.resolve(schema)["properties"]
        if not documented and where.count(".") > 0:
            return  # a nested value the document leaves untyped: nothing to compare
        declared = self.fields(cls)
        self.assertEqual(sorted(set(declared) - set(documented)), [], f"{where}: {cls.__name__} fields the service does not document")
        if request:
            self.assertEqual(sorted(set(documented) - set(declared)), [], f"{where}: request fields {cls.__name__} cannot send")
        for name, tp in declared.items():
            inner = self.wire_type(tp)
            key = f"{where}.{name}"
            if inner is not None and inner.__name__ != "KvEventData" and key not in seen:
                seen.add(key)
                self.compare(documented[name], inner, key, request, seen)

    def test_the_dataclasses_match_the_document(self) -> None:
        for path, method, req, resp in TYPED_ROUTES:
            op = self.doc["paths"][path][method]
            if req is not None:
                body = op["requestBody"]["content"]["application/json"]["schema"]
                self.compare(body, req, f"{method.upper()} {path} request", True, set())
            status = min(code for code in op["responses"] if code.startswith("2"))
            schema = op["responses"][status]["content"]["application/json"]["schema"]
            self.compare(schema, resp, f"{method.upper()} {path} {status}", False, set())


class Peers(ServiceTest):
    def test_register_list_deregister(self) -> None:
        endpoint = f"tcp://127.0.0.1:{20000 + unique_id() % 20000}"
        self.assertTrue(self.client.register_peer(endpoint), "201: added")
        self.assertFalse(self.client.register_peer(endpoint), "200: already known")
        self.assertIn(endpoint, self.client.list_peers())
        self.client.deregister_peer(endpoint)
        self.assertNotIn(endpoint, self.client.list_peers())
        self.assert_status(404, self.client.deregister_peer, endpoint)
        self.assert_status(400, self.client.register_peer, "invalid")


if __name__ == "__main__":
    unittest.main()
