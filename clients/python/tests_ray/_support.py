"""Helpers of the Ray Serve tests: service addresses, a service process of our own, waiting.

The repository's test runner (test/integration/ray/ray-serve.test.ts) starts two services on
127.0.0.1 and runs this suite in the Ray venv (scripts/ray-venv.sh) with:

- ``SELECT_SERVICE_URL``: approximate mode (``DYN_ROUTER_USE_KV_EVENTS=false``: bookings feed the index);
- ``SELECT_SERVICE_KV_URL``: fed by KV events (the fake KV engine's ZMQ publishers);
- ``SELECT_SERVICE_NODE`` and ``SELECT_SERVICE_CLI``: how to start more services (the outage test
  stops and restarts its own).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
import urllib.request
from typing import Any, Callable, Dict, List, Optional

SERVICE_URL = os.environ.get("SELECT_SERVICE_URL", "")
KV_URL = os.environ.get("SELECT_SERVICE_KV_URL", "")
NODE = os.environ.get("SELECT_SERVICE_NODE", "")
CLI = os.environ.get("SELECT_SERVICE_CLI", "")
MISSING = [name for name, value in (("SELECT_SERVICE_URL", SERVICE_URL), ("SELECT_SERVICE_KV_URL", KV_URL),
                                    ("SELECT_SERVICE_NODE", NODE), ("SELECT_SERVICE_CLI", CLI)) if not value]


def http_json(url: str, method: str = "GET", body: Any = None, timeout: float = 10.0) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, every: float = 0.1) -> Any:
    """Polls ``check`` until it returns something truthy; fails with ``what`` and the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as err:  # the condition may not be checkable yet (service restarting)
            last = err
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def active_by_worker(url: str, model: str) -> Dict[int, int]:
    """``GET /loads``: active requests per worker of a partition (ranks summed)."""
    out: Dict[int, int] = {}
    for part in http_json(f"{url}/loads?model_name={model}"):
        for load in part["loads"]:
            out[load["worker_id"]] = out.get(load["worker_id"], 0) + load["active_requests"]
    return out


def workers(url: str, model: str) -> List[Dict[str, Any]]:
    return http_json(f"{url}/workers?model_name={model}")


def rss_mb() -> float:
    """This process's resident memory in MB (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class ServiceProcess:
    """A select-service process of this test (built CLI, 127.0.0.1); restartable on its port."""

    def __init__(self, env: Optional[Dict[str, str]] = None) -> None:
        self.env = {**os.environ, "DYN_ROUTER_USE_KV_EVENTS": "false", **(env or {})}
        self.port = 0
        self.proc: Optional[subprocess.Popen] = None
        self.url = ""

    def start(self, timeout: float = 30.0) -> "ServiceProcess":
        self.proc = subprocess.Popen([NODE, CLI, "--host", "127.0.0.1", "--port", str(self.port)], env=self.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        found: List[str] = []

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                m = re.search(r"Server listening at (http://127\.0\.0\.1:(\d+))", line)
                if m and not found:
                    found.append(m.group(1))

        threading.Thread(target=read, daemon=True).start()
        self.url = wait_for("the service to listen", lambda: found[0] if found else None, timeout)
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
