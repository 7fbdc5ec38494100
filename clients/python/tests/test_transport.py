"""The client's HTTP behaviour against a tiny local server on 127.0.0.1: keep-alive reuse, stale
connections, retries, timeouts, headers (bearer token, policy class), the base URL, the bytes it
sends and how it reads error bodies."""
from __future__ import annotations

import http.client
import socket
import threading
import unittest
from typing import Any, Dict

from _support import DROP, Answer, LocalServer, Seen

from select_service_client import (
    U64_MAX, SelectServiceClient, SelectServiceConnectionError, SelectServiceError, SelectServiceTimeout,
)
from select_service_client._transport import Transport

SELECTION: Dict[str, Any] = {
    "model_name": "m", "routing_group": "default", "worker_id": U64_MAX, "dp_rank": 0, "endpoint": "http://w:8000",
    "block_size": 4, "overlap": {"longest_matched": 0, "gpu": 0, "dp": {"0": 0}, "cpu": 0, "disk": 0},
    "effective_prefill_tokens": 4, "potential_decode_blocks": 1,
}


RECORD = {"worker_id": U64_MAX, "model_name": "m", "routing_group": "default", "lifecycle": "schedulable"}


def ok(seen: Seen) -> Answer:
    """Answers every route with a minimal valid body (any base-URL prefix)."""
    path = seen.path.split("?")[0]
    if seen.method == "POST" and path.endswith("/workers"):
        return Answer(201, RECORD)
    if path.endswith(("/workers", "/loads")):
        return Answer(payload=[])
    if path.endswith(("/select", "/select_and_reserve")):
        return Answer(payload=SELECTION)
    return Answer()


class KeepAlive(unittest.TestCase):
    def test_calls_share_one_connection(self) -> None:
        with LocalServer(ok) as srv, SelectServiceClient(srv.url) as client:
            self.assertEqual(client.health(), "ok")
            client.list_workers(model_name="m")
            client.select(model_name="m", token_ids=[1, 2, 3])
            client.select_and_reserve(model_name="m", token_ids=[1, 2, 3])
            client.prefill_complete("r1")
            self.assertEqual(len(srv.seen), 5)
            self.assertEqual(srv.connections, 1, "every call went over the first connection")
            self.assertEqual(client.connections_opened, 1)
            self.assertEqual([s.nth_on_connection for s in srv.seen], [1, 2, 3, 4, 5])

    def test_a_connection_the_server_closed_while_idle_is_replaced_before_sending(self) -> None:
        # the server answers, then closes (as a keep-alive timeout does): the next call, even a
        # booking that is never retried, goes out once on a new connection
        with LocalServer(lambda s: Answer(payload=SELECTION if s.path.startswith("/select") else None,
                                          close_after=True)) as srv, SelectServiceClient(srv.url) as client:
            client.health()
            self.wait_closed(client)
            client.select_and_reserve(model_name="m", token_ids=[1])
            self.assertEqual(srv.paths("POST"), ["/select_and_reserve"])
            self.assertEqual(srv.connections, 2)

    def wait_closed(self, client: SelectServiceClient) -> None:
        # the FIN may still be in flight when the answer has been read; wait until the socket shows it
        import select
        sock = client._transport._conn.sock if client._transport._conn else None  # noqa: SLF001
        if sock is not None:
            select.select([sock], [], [], 5)

    def test_an_idempotent_call_is_retried_once_when_a_reused_connection_drops_it(self) -> None:
        # the server drops the second request of every connection unanswered
        with LocalServer(lambda s: DROP if s.nth_on_connection == 2 else ok(s)) as srv, \
                SelectServiceClient(srv.url) as client:
            client.health()
            self.assertEqual(client.list_workers(), [])
            self.assertEqual(srv.paths("GET"), ["/health", "/workers", "/workers"], "sent twice: dropped, then answered")
            self.assertEqual([(s.connection, s.nth_on_connection) for s in srv.seen], [(1, 1), (1, 2), (2, 1)])

    def test_a_booking_is_not_retried(self) -> None:
        with LocalServer(lambda s: DROP if s.nth_on_connection == 2 else ok(s)) as srv, \
                SelectServiceClient(srv.url) as client:
            client.health()
            with self.assertRaises(SelectServiceConnectionError) as ctx:
                client.select_and_reserve(model_name="m", token_ids=[1])
            self.assertIsNone(ctx.exception.status)
            self.assertIsInstance(ctx.exception, SelectServiceError)
            self.assertIsInstance(ctx.exception.__cause__, (http.client.RemoteDisconnected, ConnectionError))
            self.assertEqual(srv.paths("POST"), ["/select_and_reserve"], "sent once")
            self.assertEqual(client.health(), "ok", "the next call opens a new connection")

    def test_a_fresh_connection_that_fails_is_not_retried(self) -> None:
        with LocalServer(lambda s: DROP) as srv, SelectServiceClient(srv.url) as client:
            with self.assertRaises(SelectServiceConnectionError):
                client.list_workers()
            self.assertEqual(len(srv.seen), 1)


class Timeouts(unittest.TestCase):
    def setUp(self) -> None:
        self.release = threading.Event()
        self.addCleanup(self.release.set)

    def slow(self, seen: Seen) -> Answer:
        if seen.path == "/select":
            self.release.wait(10)
            return Answer(payload=SELECTION)
        return Answer()

    def test_per_call_timeout(self) -> None:
        with LocalServer(self.slow) as srv, SelectServiceClient(srv.url, timeout=10) as client:
            with self.assertRaises(SelectServiceTimeout) as ctx:
                client.select(model_name="m", token_ids=[1], timeout=0.2)
            self.assertIsNone(ctx.exception.status)
            self.assertIsInstance(ctx.exception, SelectServiceConnectionError)
            self.release.set()
            self.assertEqual(client.health(), "ok", "the timed-out connection was replaced")
            self.assertEqual(srv.connections, 2)

    def test_default_timeout(self) -> None:
        with LocalServer(self.slow) as srv, SelectServiceClient(srv.url, timeout=0.2) as client:
            with self.assertRaises(SelectServiceTimeout):
                client.select(model_name="m", token_ids=[1])


class Headers(unittest.TestCase):
    def test_bearer_token_policy_class_and_extra_headers(self) -> None:
        with LocalServer(ok) as srv, SelectServiceClient(srv.url, token="s3cr3t", headers={"x-tenant": "a"}) as client:
            client.select(model_name="m", token_ids=[1], policy_class="latency")
            client.select_and_reserve(model_name="m", token_ids=[1], policy_class="batch")
            client.loads()
            sel, sar, loads = srv.seen
            for seen in srv.seen:
                self.assertEqual(seen.headers["authorization"], "Bearer s3cr3t")
                self.assertEqual(seen.headers["x-tenant"], "a")
                self.assertTrue(seen.headers["user-agent"].startswith("select-service-client-python/"))
            self.assertEqual(sel.headers["x-dynamo-meta-policy-class"], "latency")
            self.assertEqual(sar.headers["x-dynamo-meta-policy-class"], "batch")
            self.assertNotIn("x-dynamo-meta-policy-class", loads.headers)
            self.assertEqual(sel.headers["content-type"], "application/json")
            self.assertNotIn("content-type", loads.headers, "a GET has no body")

    def test_no_token_no_authorization_header(self) -> None:
        with LocalServer(ok) as srv, SelectServiceClient(srv.url) as client:
            client.health()
            self.assertNotIn("authorization", srv.seen[0].headers)


class Requests(unittest.TestCase):
    def test_base_url_prefix_path_quoting_and_query(self) -> None:
        with LocalServer(ok) as srv, SelectServiceClient(srv.url + "/selector/") as client:
            client.prefill_complete("a/b c")
            client.output_block("id-1")
            client.output_block("id-1", decay_fraction=0.5)
            client.free_reservation("id-1")
            client.list_workers(model_name="m&x", routing_group="g")
            client.loads()
            self.assertEqual([(s.method, s.path) for s in srv.seen], [
                ("POST", "/selector/reservations/a%2Fb%20c/prefill_complete"),
                ("POST", "/selector/reservations/id-1/output_block"),
                ("POST", "/selector/reservations/id-1/output_block"),
                ("DELETE", "/selector/reservations/id-1"),
                ("GET", "/selector/workers?model_name=m%26x&routing_group=g"),
                ("GET", "/selector/loads"),
            ])
            self.assertEqual(srv.seen[1].json(), {}, "output_block always sends a JSON object")
            self.assertEqual(srv.seen[1].headers["content-type"], "application/json")
            self.assertEqual(srv.seen[2].json(), {"decay_fraction": 0.5})
            self.assertEqual(srv.seen[0].body, b"", "prefill_complete sends no body")

    def test_u64_values_are_written_as_exact_integers(self) -> None:
        with LocalServer(ok) as srv, SelectServiceClient(srv.url) as client:
            rec = client.upsert_worker(worker_id=U64_MAX, model_name="m", endpoint="http://w:8000", block_size=4)
            self.assertEqual(rec.worker_id, U64_MAX)
            client.select(model_name="m", block_hashes=[0, U64_MAX], sequence_hashes=[-1, -(1 << 63)], isl_tokens=8,
                          allowed_worker_ids=[U64_MAX])
            body = srv.seen[0].body.decode()
            self.assertIn('"worker_id":18446744073709551615', body)
            sent = srv.seen[1].body.decode()
            self.assertIn('"block_hashes":[0,18446744073709551615]', sent)
            self.assertIn('"sequence_hashes":[-1,-9223372036854775808]', sent)
            self.assertIn('"allowed_worker_ids":[18446744073709551615]', sent)
            self.assertNotIn("e+", sent)
            with self.assertRaises(TypeError):
                client.select(model_name="m", block_hashes=[1.0], sequence_hashes=[1], isl_tokens=4)

    def test_base_url_checks_and_scheme(self) -> None:
        for bad in ("ftp://h:1", "127.0.0.1:8092", "http://", "http://h:1/?q=1"):
            with self.assertRaises(ValueError, msg=bad):
                SelectServiceClient(bad)
        t = Transport("https://selector.example:8443/api", {})
        self.assertIsInstance(t.new_connection(1.0), http.client.HTTPSConnection)
        self.assertEqual((t.host, t.port, t.prefix), ("selector.example", 8443, "/api"))
        self.assertEqual(Transport("http://h", {}).port, 80)
        self.assertEqual(Transport("https://h", {}).port, 443)
        self.assertNotIsInstance(Transport("http://h:1", {}).new_connection(1.0), http.client.HTTPSConnection)


class Errors(unittest.TestCase):
    def test_a_429_carries_its_details(self) -> None:
        details = {"policy_class": "latency", "limit_kind": "requests", "current": 0, "limit": 0}
        body = {"error": 'router policy class "latency" queue requests limit reached (current=0, limit=0)',
                "details": details}
        with LocalServer(lambda s: Answer(429, body)) as srv, SelectServiceClient(srv.url) as client:
            with self.assertRaises(SelectServiceError) as ctx:
                client.select(model_name="m", token_ids=[1], policy_class="latency")
            err = ctx.exception
            self.assertEqual(err.status, 429)
            self.assertEqual(err.error, body["error"])
            self.assertEqual(err.details, details)
            self.assertIn('"details"', err.body)
            self.assertEqual((err.method, err.path), ("POST", "/select"))

    def test_a_body_that_is_not_the_json_error_shape(self) -> None:
        with LocalServer(lambda s: Answer(502, b"upstream unavailable", {"Content-Type": "text/plain"})) as srv, \
                SelectServiceClient(srv.url) as client:
            with self.assertRaises(SelectServiceError) as ctx:
                client.loads()
            self.assertEqual((ctx.exception.status, ctx.exception.error), (502, "upstream unavailable"))
            self.assertIsNone(ctx.exception.details)
            self.assertNotIsInstance(ctx.exception, SelectServiceConnectionError)

    def test_an_answer_that_is_not_json_or_misses_fields(self) -> None:
        answers = {"/health": Answer(payload=b"<html>"), "/select": Answer(payload={"worker_id": 1})}
        with LocalServer(lambda s: answers[s.path]) as srv, SelectServiceClient(srv.url) as client:
            with self.assertRaises(SelectServiceError) as ctx:
                client.health()
            self.assertEqual(ctx.exception.status, 200)
            self.assertIn("not JSON", ctx.exception.error)
            with self.assertRaises(SelectServiceError) as ctx:
                client.select(model_name="m", token_ids=[1])
            self.assertIn("SelectResponse", ctx.exception.error)


class _AnswersAtOnce:
    """A server on 127.0.0.1 that answers every request 413 as soon as its headers are in, then
    closes without reading the body (the client is still sending: its send fails)."""

    BODY = b'{"error":"Failed to buffer the request body: length limit exceeded"}'

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nConnection: close\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(self.BODY), self.BODY))

    def close(self) -> None:
        self.thread.join(timeout=10)
        self.sock.close()


class EarlyAnswers(unittest.TestCase):
    def test_an_answer_sent_before_the_body_was_read_is_the_typed_error_even_when_sending_fails(self) -> None:
        srv = _AnswersAtOnce()
        self.addCleanup(srv.close)
        with SelectServiceClient(srv.url) as client:
            with self.assertRaises(SelectServiceError) as ctx:
                # far more than the socket buffers take in: the send fails once the server has closed
                client.request("POST", "/select", {"pad": "a" * (32 * 1024 * 1024)})
        self.assertNotIsInstance(ctx.exception, SelectServiceConnectionError)
        self.assertEqual((ctx.exception.status, ctx.exception.error),
                         (413, "Failed to buffer the request body: length limit exceeded"))


class NewerService(unittest.TestCase):
    def test_fields_this_client_does_not_know_are_kept_in_extra(self) -> None:
        record = {"worker_id": 1, "model_name": "m", "routing_group": "default", "lifecycle": "schedulable",
                  "kv_events": [{"dp_rank": 0, "state": "live"}]}
        answers = {
            "/ready": Answer(payload={"ready": True, "schedulable_workers": 1, "workers": [record],
                                      "kv_feeds": {"live": 1}}),
            "/select": Answer(payload={**SELECTION, "queue_wait_ms": 3, "overlap": {**SELECTION["overlap"], "ext": 1}}),
        }
        with LocalServer(lambda s: answers[s.path]) as srv, SelectServiceClient(srv.url) as client:
            ready = client.ready()
            self.assertEqual(ready.extra, {"kv_feeds": {"live": 1}})
            self.assertEqual(ready.workers[0].extra, {"kv_events": [{"dp_rank": 0, "state": "live"}]})
            sel = client.select(model_name="m", token_ids=[1])
            self.assertEqual(sel.extra, {"queue_wait_ms": 3})
            self.assertEqual(sel.overlap.extra, {"ext": 1})


if __name__ == "__main__":
    unittest.main()
