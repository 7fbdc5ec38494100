"""Availability first (internal): when select-service does not answer, requests take Serve's
default choice, and the router says so once per outage.

After a failure the service is left alone for ``retry_after_s`` (requests meanwhile go straight to
the default choice, without paying the timeout), then the next request tries it again; the first
answer ends the outage, logged once with how many requests were routed without it.
"""
from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Optional


class Availability:
    """Outage state of one service URL, with the counters the router reports."""

    def __init__(self, url: str, retry_after_s: float, log: logging.Logger, where: str) -> None:
        self.url = url
        self.retry_after_s = retry_after_s
        self.log = log
        self.where = where
        self.down_since: Optional[float] = None
        self._retry_at = 0.0
        self.outages = 0
        self.fallbacks: "Counter[str]" = Counter()
        """Requests routed by Serve's default choice, by reason."""
        self._fallbacks_in_outage = 0
        self._logged_statuses: set = set()

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def should_try(self, now: Optional[float] = None) -> bool:
        """False while the service is down and its retry time has not come."""
        return self.down_since is None or (time.monotonic() if now is None else now) >= self._retry_at

    def failed(self, err: BaseException, now: Optional[float] = None) -> None:
        """No answer (timeout, refused, reset). Logs once when an outage starts."""
        now = time.monotonic() if now is None else now
        self._retry_at = now + self.retry_after_s
        if self.down_since is None:
            self.down_since = now
            self.outages += 1
            self._fallbacks_in_outage = 0
            self.log.warning(
                "select-service at %s is not answering (%s); %s: requests take Serve's default choice "
                "until it answers again (tried again every %.1f s)", self.url, err, self.where, self.retry_after_s)

    def answered(self, now: Optional[float] = None) -> bool:
        """The service answered; True when this ends an outage (logged once)."""
        if self.down_since is None:
            return False
        now = time.monotonic() if now is None else now
        self.log.warning("select-service at %s answers again after %.1f s; %s: %d request(s) took Serve's default "
                         "choice meanwhile", self.url, now - self.down_since, self.where, self._fallbacks_in_outage)
        self.down_since = None
        return True

    def fell_back(self, reason: str) -> None:
        """Counts one request routed by Serve's default choice."""
        self.fallbacks[reason] += 1
        if self.down_since is not None:
            self._fallbacks_in_outage += 1

    def rejected(self, status: Optional[int], message: str) -> None:
        """The service answered with an error status: counted, logged once per status."""
        if status not in self._logged_statuses:
            self._logged_statuses.add(status)
            self.log.warning("select-service at %s answered %s to a selection (%s); %s: such requests take Serve's "
                             "default choice (logged once per status)", self.url, status, message, self.where)
