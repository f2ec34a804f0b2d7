"""Screening for the search loop (`ScreeningSteps`, mixed into `SearchRunner`).

An expansion by a local synthesizer (the offline templates: proposals cost nothing) asks for
`SearchConfig.screen` configurations of the chosen program instead of the step's children,
has the executor screen them (evaluation/screening.py: spot-check and timing in a warm
sandbox), and fully evaluates only the fastest `screen_finalists`. The others become
`screened` nodes: in the tree and its events with their timing or failure, never evaluated,
never the best, never a reward.
"""

from __future__ import annotations

from concurrent.futures import wait
from typing import Any

from search_engine.protocols import ScreenRequest
from search_engine.synthesis.base import Proposal


class ScreeningSteps:
    """SearchRunner's screening side (its `config`, `executor`, `synthesizer`, `tree`,
    `events`, `_cancel` and `_time_limit_reason`)."""

    def _screening(self) -> bool:
        return (self.config.screen > 0 and callable(getattr(self.executor, "screen", None))
                and not getattr(self.synthesizer, "remote", False))

    def _proposal_count(self, count: int) -> int:
        """How many proposals a step asks for: the family to screen, or its children."""
        return max(count, self.config.screen) if self._screening() else count

    def _finalist_count(self, count: int) -> int:
        return min(count, self.config.screen_finalists or count)

    @property
    def screened(self) -> int:
        return sum(1 for n in self.tree.nodes.values() if n.origin.get("screen"))

    def _screen_family(self, parent_id: int, proposals: list[Proposal],
                       finalists: int) -> list[dict[str, Any]] | None:
        """Each proposal's screening (origin["screen"]), the fastest `finalists` that passed
        (the first ones when none passed) marked `finalist`; [] when the screening could not
        run (the caller fully evaluates as without screening), None when it was stopped (the
        caller makes nothing)."""
        request = ScreenRequest(problem_source=self.problem_source,
                                sources=[p.source for p in proposals], target=self.target.name,
                                precision_policy=self.config.precision_policy,
                                timeout_s=self.config.screen_timeout_s)
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
        self.events.log(f"screened {len(proposals)} configurations of node {parent_id} in "
                        f"{result.duration_s:.1f} s: {len(ranked)} passed the spot-check, "
                        f"{len(chosen)} go to full evaluation")
        return screens
