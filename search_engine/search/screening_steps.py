"""Screening for the search loop (`ScreeningSteps`, mixed into `SearchRunner`).

An expansion by a local synthesizer (the offline templates: proposals cost nothing) asks for
`SearchConfig.screen` configurations of the chosen program instead of the step's children,
has the executor screen them (evaluation/screening.py: spot-check and timing in a warm
sandbox), and fully evaluates only the fastest `screen_finalists`. The others become
`screened` nodes: in the tree and its events with their timing or failure, never evaluated,
never the best, never a reward.

The first evaluation is never screened: the template's default is evaluated at once (it
measures the reference and the baselines the screenings reuse), so a search always has a
verdict early. With a time limit, a screening stops starting configurations when what is
left is only enough for its finalists' full evaluations (timed from those already done).
"""

from __future__ import annotations

import math
import statistics
from concurrent.futures import wait
from typing import Any

from search_engine.protocols import ScreenRequest
from search_engine.synthesis.base import Proposal


MIN_SCREEN_S = 5.0  # less time than this before the finalists must start: no screening


class ScreeningSteps:
    """SearchRunner's screening side (its `config`, `executor`, `synthesizer`, `tree`,
    `events`, `_cancel` and `_time_limit_reason`)."""

    def _screening(self) -> bool:
        return (self.config.screen > 0 and callable(getattr(self.executor, "screen", None))
                and not getattr(self.synthesizer, "remote", False))

    def _screens_now(self) -> bool:
        """Screening, past the first evaluation (see the module's docstring)."""
        return self._screening() and not self._warming_up()

    def _proposal_count(self, count: int) -> int:
        """How many proposals a step asks for: the family to screen, or its children."""
        return max(count, self.config.screen) if self._screens_now() else count

    def _finalist_count(self, count: int) -> int:
        return min(count, self.config.screen_finalists or count)

    @property
    def screened(self) -> int:
        return sum(1 for n in self.tree.nodes.values()
                   if n.origin.get("screen") and not n.origin["screen"].get("skipped"))

    def _evaluation_estimate(self) -> float:
        """Seconds a full evaluation takes here: the median of those after the first (which
        also measured the reference and baselines), else the first; 30 s before any."""
        seconds = self._evaluation_seconds
        later = seconds[1:] or seconds
        return statistics.median(later) if later else 30.0

    def _screen_deadline(self, finalists: int) -> float | None:
        """Seconds the screening may take so that its finalists' full evaluations still fit
        before the time limit; None without a limit, 0 when no screening fits."""
        left = self._seconds_left()
        if left is None:
            return None
        rounds = math.ceil(finalists / max(1, self.config.max_in_flight))
        reserve = rounds * self._evaluation_estimate() * 1.25 + 2.0
        deadline = left - reserve
        return deadline if deadline >= MIN_SCREEN_S else 0.0

    def _screen_family(self, parent_id: int, proposals: list[Proposal],
                       finalists: int) -> list[dict[str, Any]] | None:
        """Each proposal's screening (origin["screen"]), the fastest `finalists` that passed
        (the first ones when none passed) marked `finalist`; [] when the screening could not
        run or no time is left for one (the caller fully evaluates as without screening),
        None when it was stopped (the caller makes nothing)."""
        deadline = self._screen_deadline(finalists)
        if deadline == 0.0:
            self.events.log(f"no time left to screen configurations of node {parent_id}; "
                            f"its children are fully evaluated")
            return []
        request = ScreenRequest(problem_source=self.problem_source,
                                sources=[p.source for p in proposals], target=self.target.name,
                                precision_policy=self.config.precision_policy,
                                timeout_s=self.config.screen_timeout_s, deadline_s=deadline)
        try:
            future = self.executor.screen(request)
            while not wait([future], timeout=0.25).done:
                if self._cancel.is_set() or self._time_limit_reason():
                    cancel = getattr(self.executor, "cancel", None)
                    (cancel or (lambda f: f.cancel()))(future)
                    return None
            result = future.result()
        except Exception as exc:  # noqa: BLE001 - the problem, host or executor: as before
            self.events.log(f"screening failed ({type(exc).__name__}: {exc}); the children "
                            "are fully evaluated instead", "warning")
            return []
        ranked = result.ranked()
        rank = {c.index: i + 1 for i, c in enumerate(ranked)}
        # none passed: the first ones are evaluated anyway, so the tree learns the failure
        # from a full verdict (its diagnosis drives the next moves) instead of stalling
        chosen = {c.index for c in ranked[:finalists]} or set(range(min(finalists,
                                                                           len(proposals))))
        screens = []
        for config in result.configurations:
            screen = {k: v for k, v in config.to_dict().items() if k != "index"}
            screen.update(rank=rank.get(config.index), finalist=config.index in chosen)
            screens.append(screen)
        skipped = sum(1 for c in result.configurations if c.skipped)
        phases = ", ".join(f"{name[:-2]} {seconds:.1f} s" for name, seconds
                           in result.phases.items())
        self.events.log(f"screened {len(proposals) - skipped} configurations of node "
                        f"{parent_id} in {result.duration_s:.1f} s on {result.sandboxes} "
                        f"sandboxes: {len(ranked)} passed the spot-check, {len(chosen)} go to "
                        f"full evaluation" + (f"; {skipped} not screened (time limit)"
                                              if skipped else "")
                        + (f" [{phases}]" if phases else ""))
        return screens
