"""The select-then-reserve flow helper against real services: every way out of the ``with`` block
frees the booking (checked with ``GET /loads`` and a second DELETE answering 404)."""
from __future__ import annotations

import logging
import socket
import unittest

from _support import QUEUE_URL, SERVICE_URL, needs, toks, unique, unique_id

from select_service_client import SelectServiceClient, SelectServiceError


class Boom(Exception):
    pass


def refusing_port(test: unittest.TestCase) -> int:
    """A 127.0.0.1 port that refuses connections for the rest of the test: a socket bound there
    and never listening holds it (a port merely found free could be taken meanwhile)."""
    s = socket.socket()
    test.addCleanup(s.close)
    s.bind(("127.0.0.1", 0))
    return int(s.getsockname()[1])


class BookingTest(unittest.TestCase):
    url = SERVICE_URL

    def setUp(self) -> None:
        self.client = SelectServiceClient(str(self.url))
        self.addCleanup(self.client.close)
        self.model = unique("booking")
        self.wid = unique_id()
        rec = self.client.upsert_worker(worker_id=self.wid, model_name=self.model, endpoint="http://w:8000",
                                        block_size=4, max_num_batched_tokens=1 << 20)
        self.assertEqual(rec.lifecycle, "schedulable", rec.not_schedulable_reasons)
        self.addCleanup(self.client.delete_worker, self.wid)

    def load(self) -> tuple:
        """(active_requests, prefill tokens) of the worker."""
        [[load]] = [p.loads for p in self.client.loads(model_name=self.model)]
        return load.active_requests, load.potential_prefill_tokens

    def assert_freed(self, selection_id: str) -> None:
        self.assertEqual(self.load(), (0, 0))
        with self.assertRaises(SelectServiceError) as ctx:
            self.client.free_reservation(selection_id)
        self.assertEqual(ctx.exception.status, 404, "already freed by the booking")


@needs(SERVICE_URL, "SELECT_SERVICE_URL")
class TwoStep(BookingTest):
    def test_the_whole_flow_by_replay(self) -> None:
        with self.client.booking(model_name=self.model, token_ids=toks(8)) as b:
            self.assertEqual((b.worker_id, b.endpoint), (self.wid, "http://w:8000"))
            self.assertEqual(self.load(), (0, 0), "selected, not booked yet")
            res = b.reserve()
            self.assertEqual((b.reserved_by, res.selection_id, res.worker_id), ("replay", b.selection_id, self.wid))
            self.assertEqual(self.load(), (1, 8))
            b.prefill_complete()
            self.assertEqual(self.load(), (1, 0))
            b.output_block()
            b.output_block(decay_fraction=1.0)
        self.assertTrue(b.freed)
        self.assert_freed(b.selection_id)

    def test_an_exception_inside_frees_the_booking(self) -> None:
        with self.assertRaises(Boom):
            with self.client.booking(model_name=self.model, token_ids=toks(8), selection_id=unique("mine")) as b:
                b.reserve()
                self.assertEqual(self.load(), (1, 8))
                raise Boom("the worker call failed")
        self.assertTrue(b.selection_id.startswith("mine-"), "a given selection_id is kept")
        self.assert_freed(b.selection_id)

    def test_an_exception_before_reserving_leaves_nothing_booked(self) -> None:
        with self.assertRaises(Boom):
            with self.client.booking(model_name=self.model, token_ids=toks(8)) as b:
                raise Boom()
        self.assertFalse(b.reserved)
        self.assertEqual(self.load(), (0, 0))

    def test_a_404_while_freeing_is_ignored(self) -> None:
        with self.client.booking(model_name=self.model, token_ids=toks(8)) as b:
            b.reserve()
            self.client.free_reservation(b.selection_id)  # freed behind the booking's back
        self.assertTrue(b.freed)
        with self.assertRaises(Boom), self.assertLogs("select_service_client", logging.WARNING) as logs:
            with self.client.booking(model_name=self.model, token_ids=toks(8)) as b2:
                b2.reserve()
                b2.client = SelectServiceClient(f"http://127.0.0.1:{refusing_port(self)}")  # the cleanup cannot connect
                raise Boom()
        self.assertIn(b2.selection_id, logs.output[0], "a failed cleanup is logged, the body's exception wins")
        self.assertFalse(b2.freed)
        self.client.free_reservation(b2.selection_id)

    def test_lifecycle_calls_need_a_booking(self) -> None:
        with self.client.booking(model_name=self.model, token_ids=toks(8)) as b:
            with self.assertRaises(RuntimeError):
                b.prefill_complete()
            b.reserve()
            with self.assertRaises(RuntimeError):
                b.reserve()
        with self.assertRaises(RuntimeError):
            b.output_block()


@needs(SERVICE_URL, "SELECT_SERVICE_URL")
class Atomic(BookingTest):
    def test_booked_on_entry_and_freed_on_an_exception(self) -> None:
        with self.assertRaises(Boom):
            with self.client.reserved_booking(model_name=self.model, token_ids=toks(8)) as b:
                self.assertEqual(b.reserved_by, "select_and_reserve")
                self.assertEqual(self.load(), (1, 8))
                self.assertEqual(len(b.selection.sequence_hashes or []), 2)  # type: ignore[union-attr]
                raise Boom()
        self.assert_freed(b.selection_id)


@needs(QUEUE_URL, "SELECT_SERVICE_QUEUE_URL")
class ExplicitFallback(BookingTest):
    """On this service no selection is cached, so every replay reservation answers 404."""

    url = QUEUE_URL

    def test_a_replay_404_books_in_the_explicit_form(self) -> None:
        with self.assertRaises(SelectServiceError) as ctx:
            sid = unique("direct")
            self.client.select(model_name=self.model, token_ids=toks(8), selection_id=sid)
            self.client.create_reservation(selection_id=sid, model_name=self.model)
        self.assertEqual(ctx.exception.status, 404, "the replay form finds nothing here")
        with self.assertRaises(Boom):
            with self.client.booking(model_name=self.model, token_ids=toks(8)) as b:
                b.reserve()
                self.assertEqual(b.reserved_by, "explicit")
                self.assertEqual(self.load(), (1, 8))
                raise Boom()
        self.assert_freed(b.selection_id)


if __name__ == "__main__":
    unittest.main()
