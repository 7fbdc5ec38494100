"""The router's parts without a Ray session: ids, records, settings, bookings, request fields, and
the asyncio client's three transports against the real service (``SELECT_SERVICE_URL``)."""
from __future__ import annotations

import asyncio
import json
import socket
import unittest
from typing import Any, List

from _support import MISSING, SERVICE_URL

from select_service_client import SelectServiceError, SelectServiceTimeout
from select_service_client.aio import AsyncSelectServiceClient
from select_service_client.ray import RouterSettings, selection_id_for, worker_id_for_replica, worker_record
from select_service_client.ray._bookings import Booking, BookingTable
from select_service_client.ray._request import as_token_ids, expected_output_tokens


class IdsTest(unittest.TestCase):
    def test_worker_ids_are_ray_serve_llms(self) -> None:
        from ray.llm._internal.serve.routing_policies.kv_aware.kv_token_tracker import get_worker_id

        for uid in ("abc", "ms78rg9v", "h7pn1nta", "x" * 40):
            self.assertEqual(worker_id_for_replica(uid), get_worker_id(uid))
            self.assertLess(worker_id_for_replica(uid), 1 << 64)

    def test_records_from_routing_stats(self) -> None:
        base = dict(model_name="m", routing_group=None, block_size=16)
        self.assertEqual(worker_record(7, "SERVE_REPLICA::a#d#u", {}, **base),
                         {"worker_id": 7, "model_name": "m", "endpoint": "ray://SERVE_REPLICA::a#d#u", "block_size": 16})
        llm = {"kv_event_metadata": {"endpoint": "tcp://10.0.0.1:5557", "block_size": 32, "max_num_batched_tokens": 8192,
                                     "dp_rank": 2, "replay_endpoint": "tcp://10.0.0.1:6557"}}
        rec = worker_record(7, "r", llm, **base)
        self.assertEqual((rec["kv_events_endpoints"], rec["data_parallel_start_rank"], rec["data_parallel_size"]),
                         ({"2": "tcp://10.0.0.1:5557"}, 2, 1))
        self.assertEqual((rec["replay_endpoint"], rec["block_size"], rec["max_num_batched_tokens"]),
                         ("tcp://10.0.0.1:6557", 32, 8192))
        flat = worker_record(7, "r", {**llm, "kv_events_endpoint": "tcp://h:1", "block_size": 64}, model_name="m",
                             routing_group="g", block_size=16)
        self.assertEqual((flat["kv_events_endpoint"], flat["block_size"], flat["routing_group"]), ("tcp://h:1", 64, "g"))
        self.assertNotIn("kv_events_endpoints", flat)  # the flat key wins
        self.assertEqual(worker_record(7, "r", {"block_size": -1, "total_kv_blocks": True}, **base)["block_size"], 16)

    def test_selection_ids(self) -> None:
        self.assertEqual(selection_id_for("app", "dep", "r-1"), "serve:app:dep:r-1")


class SettingsTest(unittest.TestCase):
    def test_defaults_and_errors(self) -> None:
        s = RouterSettings.from_kwargs({"select_service_url": "http://h:1"}, default_model="dep")
        self.assertEqual((s.model_name, s.timeout_s, s.block_size, s.token_ids_kwarg, s.transport),
                         ("dep", 0.05, 16, "request_token_ids", "asyncio"))
        for bad, text in (({"select_service_url": "http://h:1", "timeout": 1}, "unknown request_router_kwargs"),
                          ({"select_service_url": "http://h:1", "timeout_s": 0}, "timeout_s must be"),
                          ({"select_service_url": "http://h:1", "block_size": "16"}, "block_size must be"),
                          ({"select_service_url": "http://h:1", "transport": "curl"}, "transport must be")):
            with self.assertRaisesRegex(ValueError, text):
                RouterSettings.from_kwargs(bad, default_model="dep")


class BookingsTest(unittest.TestCase):
    def booking(self, table: BookingTable, iid: str, created: float = 0.0) -> Booking:
        b = Booking(table.new_selection_id(iid), iid, 1, {}, created_at=created, wanted=1)
        table.add(b)
        return b

    def test_calls_sharing_a_request_id_get_their_own_bookings(self) -> None:
        table = BookingTable("serve:a:d:")
        first, second = self.booking(table, "r"), self.booking(table, "r")
        self.assertEqual((first.selection_id, second.selection_id), ("serve:a:d:r", "serve:a:d:r#2"))
        first.sent_to("A")
        second.sent_to("B")
        self.assertIs(table.completed("B", "r"), second)
        self.assertIs(table.completed("A", "r"), first)
        self.assertIsNone(table.completed("A", "r"))  # a second completion changes nothing
        self.assertEqual(len(table), 0)

    def test_a_rejected_send_does_not_free_the_live_one(self) -> None:
        table = BookingTable("p:")
        b = self.booking(table, "r")
        b.sent_to("A")  # rejected by A ...
        b.sent_to("A")  # ... sent to A again and accepted
        self.assertIsNone(table.completed("A", "r"))  # the rejected send's completion
        self.assertIs(table.completed("A", "r"), b)
        c = self.booking(table, "s")
        c.sent_to("A")
        c.sent_to("B")  # moved to B
        self.assertIsNone(table.completed("A", "s"))
        self.assertIs(table.completed("B", "s"), c)

    def test_ttl(self) -> None:
        table = BookingTable("p:")
        old, new = self.booking(table, "old", created=100.0), self.booking(table, "new", created=200.0)
        self.assertEqual(table.expired(50.0, now=160.0), [old])
        self.assertFalse(old.live)
        self.assertEqual(table.expired(50.0, now=260.0), [new])


class RequestFieldsTest(unittest.TestCase):
    def test_token_ids(self) -> None:
        self.assertEqual(as_token_ids((1, 2)), [1, 2])
        for bad in (None, [], [1, -1], [1, 2 ** 32], [1.0], "12", [True]):
            self.assertIsNone(as_token_ids(bad), bad)

    def test_expected_output_tokens(self) -> None:
        class Body:
            max_tokens = 64
        self.assertEqual(expected_output_tokens([], {"max_completion_tokens": 9, "max_tokens": 5}), 9)
        self.assertEqual(expected_output_tokens([Body()], {}), 64)
        self.assertEqual(expected_output_tokens([{"max_tokens": 7}], {}), 7)
        self.assertIsNone(expected_output_tokens(["text"], {"max_tokens": 0}))


@unittest.skipIf(MISSING, f"{MISSING} not set")
class AsyncClientTest(unittest.TestCase):
    def run_all(self, body: Any) -> List[str]:
        async def each() -> List[str]:
            names = []
            for kind in ("aiohttp", "asyncio", "thread"):
                client = AsyncSelectServiceClient(SERVICE_URL, timeout=5.0, transport=kind)
                try:
                    await body(client, kind)
                finally:
                    await client.close()
                names.append(client.transport_name)
            return names
        return asyncio.run(each())

    def test_book_and_free_on_every_transport(self) -> None:
        async def body(c: AsyncSelectServiceClient, kind: str) -> None:
            model = f"aio-{kind}"
            await c.upsert_worker(worker_id=11, model_name=model, endpoint="ray://x", block_size=16)
            for i in range(3):  # the kept connections are reused
                b = await c.select_and_reserve(model_name=model, token_ids=list(range(1, 40)), selection_id=f"{kind}-{i}")
                self.assertEqual(b.worker_id, 11)
                await c.prefill_complete(b.selection_id or "")
                await c.output_block(b.selection_id or "", 0.5)
                await c.free_reservation(b.selection_id or "")
            with self.assertRaises(SelectServiceError) as err:
                await c.free_reservation(f"{kind}-0")
            self.assertEqual(err.exception.status, 404)
            self.assertEqual([w.worker_id for w in await c.list_workers(model)], [11])
            await c.delete_worker(11)
        self.assertEqual(self.run_all(body), ["aiohttp", "asyncio", "thread"])

    def test_calls_sent_in_order_are_taken_in_that_order(self) -> None:
        """Frees and a new booking of the same id, sent together: the service frees first (else the
        booking would get 409), and the answers come back in order, the 404 too."""
        async def body(c: AsyncSelectServiceClient, kind: str) -> None:
            model = f"order-{kind}"
            await c.upsert_worker(worker_id=12, model_name=model, endpoint="ray://x", block_size=16)
            await c.select_and_reserve(model_name=model, token_ids=[1, 2, 3], selection_id=f"{kind}-s")
            made = getattr(c._transport, "connections_made", None)
            book = json.dumps({"model_name": model, "token_ids": [1, 2, 3], "selection_id": f"{kind}-s"}).encode()
            path = c.reservation_path(f"{kind}-s")
            answers = await c.send_in_order([("DELETE", path, None), ("DELETE", path, None),
                                             ("POST", "/select_and_reserve", book)])
            self.assertEqual([status for status, _ in answers], [200, 404, 200], answers)
            self.assertEqual(json.loads(answers[2][1])["worker_id"], 12)
            await c.free_reservation(f"{kind}-s")  # the new booking
            self.assertEqual(getattr(c._transport, "connections_made", None), made)  # asyncio: one kept connection
            await c.delete_worker(12)
        self.assertEqual(self.run_all(body), ["aiohttp", "asyncio", "thread"])

    def test_a_service_that_does_not_answer_times_out(self) -> None:
        with socket.socket() as silent:  # accepts connections (backlog) and never answers
            silent.bind(("127.0.0.1", 0))
            silent.listen(16)
            url = f"http://127.0.0.1:{silent.getsockname()[1]}"

            async def each() -> None:
                for kind in ("aiohttp", "asyncio", "thread"):
                    client = AsyncSelectServiceClient(url, timeout=0.2, transport=kind)
                    with self.assertRaises(SelectServiceTimeout, msg=kind):
                        await client.request("GET", "/health")
                    await client.close()
            asyncio.run(each())
