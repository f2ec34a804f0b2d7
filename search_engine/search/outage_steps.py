"""Endpoint outages pause the search, not end it (`OutageSteps`, mixed into `SearchRunner`).

A synthesizer that raises a *transient* `SynthesisError` through all its retries moves the
search to `paused` with the reason and HTTP status; it tries again on a schedule
(`outage_retry_s`, doubling up to `outage_max_retry_s`), at once when someone resumes, and
resumes by itself when the endpoint answers (synthesis_steps.py ends the outage).
"""

from __future__ import annotations

import time
from typing import Any

from search_engine.search.config import PAUSED, RUNNING


class OutageSteps:
    """SearchRunner's outage side: begin an outage, wait it out, probe again, end it."""

    @property
    def outage(self) -> dict[str, Any] | None:
        """The endpoint outage the search is paused for (None when there is none)."""
        return dict(self._outage) if self._outage else None

    def _outage_probe_now(self) -> None:
        """Someone asked to resume: try the endpoint now, once."""
        outage = self._outage
        if outage is not None and not outage.get("probe_requested"):
            outage["probe_requested"] = True
            outage["retry_at"] = time.monotonic()

    def _outage_waiting(self) -> bool:
        """Paused for an outage and not yet time to try the endpoint again."""
        outage = self._outage
        if outage is None:
            return False
        return bool(self._pending) or time.monotonic() < outage["retry_at"]

    def _outage_begin(self, error: str, status_code: int | None) -> None:
        """A transient failure: pause for it (in an outage already: wait twice as long)."""
        now = time.monotonic()
        outage = self._outage
        if outage is None:
            outage = self._outage = {"since": now, "since_epoch": time.time(), "probes": 0,
                                     "retry_s": self.config.outage_retry_s}
        else:
            outage["probes"] += 1
            outage["retry_s"] = min(outage["retry_s"] * 2, self.config.outage_max_retry_s)
        outage.update(failures=self._failures, status_code=status_code, error=error[:500],
                      retry_at=now + outage["retry_s"], probe_requested=False)
        http = f"HTTP {status_code}" if status_code else "no HTTP answer"
        reason = (f"LLM endpoint unavailable ({http}): {error[:300]}; paused, trying again in "
                  f"{outage['retry_s']:g} s")
        self.events.log(reason, "warning")
        self._set_status(PAUSED, reason, outage={
            "status_code": status_code, "error": error[:500], "failures": self._failures,
            "retry_in_s": outage["retry_s"], "since": outage["since_epoch"]})

    def _outage_over(self) -> None:
        """The endpoint answered: end the outage and run on."""
        outage, self._outage = self._outage, None
        took = time.monotonic() - outage["since"]
        self._set_status(RUNNING, f"the LLM endpoint answers again; resumed after {took:.0f} s",
                         outage_over=True)
