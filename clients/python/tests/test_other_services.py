"""Errors that need a differently configured service: a 429 queue rejection with its details,
replica sync disabled (409), and a service with no schedulable worker (503, /ready false)."""
from __future__ import annotations

import unittest

from _support import EMPTY_URL, QUEUE_URL, needs, toks, unique, unique_id

from select_service_client import SelectServiceClient, SelectServiceError


@needs(QUEUE_URL, "SELECT_SERVICE_QUEUE_URL")
class QueueLimits(unittest.TestCase):
    """The service's policy file has class ``latency``: busy as soon as any prefill is active, queue
    limit 0 requests."""

    def setUp(self) -> None:
        self.client = SelectServiceClient(str(QUEUE_URL))
        self.addCleanup(self.client.close)

    def test_a_queue_rejection_is_a_429_with_details(self) -> None:
        model, wid = unique("queue"), unique_id()
        self.client.upsert_worker(worker_id=wid, model_name=model, endpoint="http://w:8000", block_size=4,
                                  max_num_batched_tokens=4)
        self.addCleanup(self.client.delete_worker, wid)
        busy = self.client.select_and_reserve(model_name=model, token_ids=toks(8))
        self.addCleanup(self.client.free_reservation, str(busy.selection_id))
        for call in (self.client.select, self.client.select_and_reserve):
            with self.assertRaises(SelectServiceError) as ctx:
                call(model_name=model, token_ids=toks(4, 9), policy_class="latency")
            err = ctx.exception
            self.assertEqual(err.status, 429, err.body)
            self.assertEqual(err.details, {"policy_class": "latency", "limit_kind": "requests", "current": 0, "limit": 0})
            self.assertIn("latency", err.error)
        # an advisory select never queues, whatever the class
        self.assertEqual(self.client.select(model_name=model, token_ids=toks(4, 9), advisory=True).worker_id, wid)

    def test_peer_routes_without_replica_sync(self) -> None:
        self.assertEqual(self.client.list_peers(), [])
        with self.assertRaises(SelectServiceError) as ctx:
            self.client.register_peer("tcp://127.0.0.1:5999")
        self.assertEqual((ctx.exception.status, ctx.exception.error), (409, "replica sync is disabled"))


@needs(EMPTY_URL, "SELECT_SERVICE_EMPTY_URL")
class NotReady(unittest.TestCase):
    def setUp(self) -> None:
        self.client = SelectServiceClient(str(EMPTY_URL))
        self.addCleanup(self.client.close)

    def test_ready_is_false_and_selection_is_503(self) -> None:
        wid = unique_id()
        rec = self.client.upsert_worker(worker_id=wid, model_name=unique("empty"), block_size=4)  # no endpoint
        self.addCleanup(self.client.delete_worker, wid)
        self.assertEqual(rec.lifecycle, "incomplete")
        ready = self.client.ready()  # a 503 answer, read as the readiness body
        self.assertFalse(ready.ready)
        self.assertEqual(ready.schedulable_workers, 0)
        self.assertIn(wid, [w.worker_id for w in ready.workers])
        with self.assertRaises(SelectServiceError) as ctx:
            self.client.select(model_name=rec.model_name, token_ids=toks(4))
        err = ctx.exception
        self.assertEqual(err.status, 503)
        # Dynamo's text, then why: the model's one worker is incomplete (no endpoint)
        self.assertTrue(err.error.startswith("no schedulable workers are available: "), err.error)
        self.assertIn(f"worker {wid} is incomplete (endpoint is required)", err.error)


if __name__ == "__main__":
    unittest.main()
