"""Python's HTTP clients against the service's early answers (test/integration/http/early-answers.test.ts).

Usage: python early_answers.py CLIENT URL TOKEN REPEAT < cases.json

CLIENT: ``urllib``, ``http.client``, ``aiohttp`` (raw aiohttp), ``client`` (the blocking
select_service_client), ``client-asyncio`` / ``client-aiohttp`` (its asyncio client with that
transport). Each case of the JSON list is sent REPEAT times; one JSON line per attempt on stdout:
``{"case", "status", "body"}`` when the client read an answer (the service's JSON body as text;
for the select_service_client, the status and ``error`` of the SelectServiceError it raised), or
``{"case", "failure"}`` with the exception when it did not.

A case: ``{"name", "method", "path", "token": bool, "content_type", "body": <JSON value> or
{"pad": N} (a JSON object of about N bytes), "chunked": bool, "stall": bool, "headers": {...}}``
(``headers``: more request headers). ``stall``: send
the first bytes of the body, wait until the answer is readable, then send the rest (a client still
sending when the service answers).
"""
from __future__ import annotations

import asyncio
import http.client
import json
import select
import sys
import traceback
import urllib.error
import urllib.request
from typing import Any, Dict, Iterator, List, Optional
from urllib.parse import urlsplit

CHUNK = 256 * 1024
STALL_LIMIT = 60.0  # seconds a stalled body waits for the answer at most (a test failure, not a timing)


def body_of(case: Dict[str, Any]) -> bytes:
    body = case["body"]
    if isinstance(body, dict) and set(body) == {"pad"}:
        return b'{"pad":"' + b"a" * body["pad"] + b'"}'
    return json.dumps(body).encode()


def headers_of(case: Dict[str, Any], token: str, length: Optional[int]) -> Dict[str, str]:
    h = {"Content-Type": case["content_type"], **case.get("headers", {})}
    if case.get("token"):
        h["Authorization"] = f"Bearer {token}"
    if length is not None:
        h["Content-Length"] = str(length)
    return h


def chunks(data: bytes) -> Iterator[bytes]:
    for i in range(0, len(data), CHUNK):
        yield data[i:i + CHUNK]


def stalled(data: bytes, sock_of) -> Iterator[bytes]:
    """The first bytes, then (once the socket has the answer) the rest."""
    yield data[:10]
    select.select([sock_of()], [], [], STALL_LIMIT)
    yield from chunks(data[10:])


class _Recording(http.client.HTTPConnection):
    last: Optional["_Recording"] = None

    def connect(self) -> None:
        super().connect()
        _Recording.last = self


def via_urllib(url: str, case: Dict[str, Any], token: str) -> Dict[str, Any]:
    data = body_of(case)
    if case.get("stall"):
        body: Any = stalled(data, lambda: _Recording.last.sock)
        headers = headers_of(case, token, len(data))
    elif case.get("chunked"):
        body, headers = chunks(data), headers_of(case, token, None)  # an iterable without a length: chunked
    else:
        body, headers = data, headers_of(case, token, None)

    class Handler(urllib.request.HTTPHandler):
        def http_open(self, req):  # type: ignore[no-untyped-def]
            return self.do_open(_Recording, req)

    req = urllib.request.Request(url + case["path"], data=body, headers=headers, method=case["method"])
    try:
        with urllib.request.build_opener(Handler).open(req, timeout=60) as resp:
            return {"status": resp.status, "body": resp.read().decode()}
    except urllib.error.HTTPError as err:
        return {"status": err.code, "body": err.read().decode()}


def via_http_client(url: str, case: Dict[str, Any], token: str) -> Dict[str, Any]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    data = body_of(case)
    try:
        if case.get("stall"):
            conn.connect()
            conn.request(case["method"], case["path"], body=stalled(data, lambda: conn.sock),
                         headers=headers_of(case, token, len(data)))
        elif case.get("chunked"):
            conn.request(case["method"], case["path"], body=chunks(data), headers=headers_of(case, token, None),
                         encode_chunked=True)
        else:
            conn.request(case["method"], case["path"], body=data, headers=headers_of(case, token, None))
        resp = conn.getresponse()
        return {"status": resp.status, "body": resp.read().decode()}
    finally:
        conn.close()


async def via_aiohttp(url: str, case: Dict[str, Any], token: str) -> Dict[str, Any]:
    import aiohttp

    data = body_of(case)
    answered = asyncio.Event()

    async def gen():  # type: ignore[no-untyped-def]
        if case.get("stall"):
            yield data[:10]
            await asyncio.wait_for(answered.wait(), STALL_LIMIT)
            data_rest = data[10:]
        else:
            data_rest = data
        for piece in chunks(data_rest):
            yield piece

    streamed = case.get("stall") or case.get("chunked")
    headers = headers_of(case, token, len(data) if case.get("stall") else None)
    async with aiohttp.ClientSession() as session:
        async with session.request(case["method"], url + case["path"], data=gen() if streamed else data,
                                   headers=headers, timeout=aiohttp.ClientTimeout(total=60)) as resp:
            answered.set()
            return {"status": resp.status, "body": (await resp.read()).decode()}


def typed(err: Any) -> Dict[str, Any]:
    from select_service_client import SelectServiceConnectionError

    if isinstance(err, SelectServiceConnectionError):
        return {"failure": f"{type(err).__name__}: {err}"}
    return {"status": err.status, "body": json.dumps({"error": err.error, **({"details": err.details} if err.details else {})})}


def via_client(url: str, case: Dict[str, Any], token: str) -> Dict[str, Any]:
    from select_service_client import SelectServiceClient, SelectServiceError

    with SelectServiceClient(url, token=token if case.get("token") else None, timeout=60) as client:
        try:
            status, raw = client.request(case["method"], case["path"], json.loads(body_of(case)), headers=case.get("headers"))
        except SelectServiceError as err:
            return typed(err)
        return {"status": status, "body": raw.decode()}


async def via_async_client(url: str, case: Dict[str, Any], token: str, transport: str) -> Dict[str, Any]:
    from select_service_client import SelectServiceError
    from select_service_client.aio import AsyncSelectServiceClient

    async with AsyncSelectServiceClient(url, token=token if case.get("token") else None, timeout=60,
                                        transport=transport) as client:
        try:
            status, raw = await client.request(case["method"], case["path"], json.loads(body_of(case)),
                                               headers=case.get("headers"))
        except SelectServiceError as err:
            return typed(err)
        return {"status": status, "body": raw.decode()}


def attempt(client: str, url: str, case: Dict[str, Any], token: str) -> Dict[str, Any]:
    if client == "urllib":
        return via_urllib(url, case, token)
    if client == "http.client":
        return via_http_client(url, case, token)
    if client == "aiohttp":
        return asyncio.run(via_aiohttp(url, case, token))
    if client == "client":
        return via_client(url, case, token)
    if client.startswith("client-"):
        return asyncio.run(via_async_client(url, case, token, client[len("client-"):]))
    raise SystemExit(f"unknown client {client}")


def main() -> None:
    client, url, token, repeat = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    cases: List[Dict[str, Any]] = json.load(sys.stdin)
    for case in cases:
        for _ in range(repeat):
            try:
                out = attempt(client, url, case, token)
            except Exception as err:  # the test prints it: a client that read no answer
                out = {"failure": "".join(traceback.format_exception_only(type(err), err)).strip()}
            print(json.dumps({"case": case["name"], **out}), flush=True)


if __name__ == "__main__":
    main()
