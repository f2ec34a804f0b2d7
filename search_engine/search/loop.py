"""The search loop: select → retrieve context → synthesize children → evaluate in parallel →
score → update the tree → emit events. `SearchRunner` is what the CLI and the web app drive.

    runner = SearchRunner(problem_source, target, synthesizer, executor,
                          config=SearchConfig(strategy="mcts", budget=12, seed=0),
                          context=provider, on_event=callback, session="s1")
    outcome = runner.run()          # blocks; call pause()/resume()/cancel() from other threads
    runner = SearchRunner.from_nodes(stored_node_dicts, ..., next_seq=last_seq + 1)

Parallelism: each step proposes ``children_per_step`` children and submits them together; up
to ``max_in_flight`` evaluations run at once. The very first evaluation runs alone: it measures
the reference and the eager/torch.compile baselines that the executor then shares.

Ordering (``ordered=True``, the default): results are applied in creation order and a new
step is selected once every step but the latest has been applied. One step is always
running while the next is chosen, and the same seed gives the same tree (the offline
synthesizer; GPU timings may still move rewards). ``ordered=False`` applies results as they
finish and selects as soon as a slot frees: never idle, not reproducible.

Synthesis beside evaluation: a synthesizer marked ``remote`` (the LLM) is asked in a thread
pool, so evaluations go on, results are applied and events flow while a request is in
flight (ordered mode keeps one request in flight, so runs stay reproducible). Offline
synthesis is quick and runs inline.

Outages pause, not end: a synthesizer that raises a *transient* ``SynthesisError`` (the
endpoint timed out, rate-limited or answered 5xx through all its retries) moves the search
to ``paused`` with the reason and HTTP status; it tries again on a schedule
(``outage_retry_s``, doubling up to ``outage_max_retry_s``) and resumes by itself when the
endpoint answers. Evaluations in flight go on meanwhile. Every request's tokens and cost
count, also those of rejected and failed attempts (``synthesis_failed`` events).

Screening (``screen``, screening_steps.py): a local synthesizer's step proposes a family of
configurations, the executor screens them in a warm sandbox (spot-check and a short timing)
and only the fastest ``screen_finalists`` are evaluated; the rest are ``screened`` nodes,
which never count as evaluations and never become the best.

Termination: ``budget`` evaluations, ``max_seconds`` wall clock, ``max_cost_usd`` (LLM), a
plateau (no best-reward gain above ``plateau_epsilon`` in ``plateau_window`` evaluations),
the synthesizer running out of new candidates, or cancel().

The runner's synthesis steps live in synthesis_steps.py, its evaluation steps in
evaluation_steps.py, its outage handling in outage_steps.py and its configuration and outcome
in config.py; this module holds the control loop and its stops.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable

from search_engine.evaluation.result import EvaluationResult
from search_engine.hardware import HardwareTarget, get_target
from search_engine.protocols import ContextProvider, Executor, NullContextProvider
from search_engine.search import credit
from search_engine.search.config import (
    CANCELLED_STATUS, COMPLETED, FAILED, PAUSED, RUNNING, SearchConfig, SearchOutcome,
    stop_code,
)
from search_engine.search.evaluation_steps import EvaluationSteps
from search_engine.search.events import EventEmitter
from search_engine.search.outage_steps import OutageSteps
from search_engine.search.screening_steps import ScreeningSteps
from search_engine.search.policies import make_policy
from search_engine.search.skill_priors import SkillGuide
from search_engine.search.synthesis_steps import SynthesisSteps, _Pending, context_query
from search_engine.search.tree import (
    CANCELLED, PENDING, PRUNED, REFERENCE, SCREENED, Node, SearchTree,
)
from search_engine.synthesis.base import NotCoveredError

NEVER_EVALUATED = (REFERENCE, CANCELLED, PRUNED, SCREENED)  # applied as they are

# Also the names callers import from here (config.py's, context_query).
__all__ = ["SearchConfig", "SearchOutcome", "SearchRunner", "run_search", "context_query",
           "RUNNING", "PAUSED", "COMPLETED", "CANCELLED_STATUS", "FAILED"]


class SearchRunner(SynthesisSteps, ScreeningSteps, EvaluationSteps, OutageSteps):
    def __init__(self, problem_source: str, target: HardwareTarget | str, synthesizer,
                 executor: Executor, config: SearchConfig | None = None,
                 context: ContextProvider | None = None,
                 on_event: Callable[[dict[str, Any]], None] | None = None,
                 session: str = "local", tree: SearchTree | None = None, next_seq: int = 1,
                 clock: Callable[[], float] = time.time, skills=None):
        self.problem_source = problem_source
        self.target = get_target(target) if isinstance(target, str) else target
        self.synthesizer = synthesizer
        self.executor = executor
        self.config = config or SearchConfig()
        self.context = context or NullContextProvider()
        self.events = EventEmitter(session, on_event, next_seq=next_seq, clock=clock)
        self.tree = tree or SearchTree()
        # first children from matching skills (skill_priors.py): given, or the context's
        self.skills = SkillGuide.for_search(skills, self.context, self.tree.nodes.values())
        options = dict(self.config.policy_options)
        if self.config.strategy in ("evolution", "evolutionary"):
            options.setdefault("supports_crossover",
                               bool(getattr(synthesizer, "supports_crossover", False)))
        self.policy = make_policy(self.config.strategy, **options)
        if tree is not None:
            self.policy.rebuild(self.tree)
            credit.update_credit(self.tree, self.config.gamma)
        self.status = "created"
        self._pause = threading.Event()
        self._cancel = threading.Event()
        self._wake = threading.Event()
        self._futures: dict[int, Future] = {}
        self._done: dict[int, EvaluationResult] = {}
        self._submitted_at: dict[int, float] = {}  # time.monotonic() of each submission
        self._evaluation_seconds: list[float] = []  # full evaluations, submit to result
        self._batches: list[list[int]] = []
        self._applied: set[int] = {n.id for n in self.tree.nodes.values()
                                   if n.evaluated or n.status in NEVER_EVALUATED}
        self._best_id = self.tree.best().id if self.tree.best() else None
        self._best_reward_for_plateau = float("-inf")
        self._since_improvement = 0
        self._cost = max(sum(float((n.origin.get("usage") or {}).get("cost_usd") or 0.0)
                             for n in self.tree.nodes.values()), self.config.spent_cost_usd)
        self._usage = {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0,
                       "cost_usd": 0.0, "failed_requests": 0}
        self._started = 0.0
        self._family = ""
        self._synthesis_error = ""
        self._pending: list[_Pending] = []  # syntheses in flight
        self._synth_pool: ThreadPoolExecutor | None = None
        self._empty_streak = 0  # expansions in a row that gave no node
        self._failures = 0  # transient synthesis failures in a row
        self._outage: dict[str, Any] | None = None
        asynchronous = self.config.async_synthesis
        self._async = bool(getattr(synthesizer, "remote", False)) if asynchronous is None \
            else asynchronous

    # -- rebuild ------------------------------------------------------------------------
    @classmethod
    def from_nodes(cls, nodes: list[dict[str, Any]], problem_source: str, target, synthesizer,
                   executor: Executor, config: SearchConfig | None = None,
                   next_seq: int = 1, **kwargs) -> "SearchRunner":
        """A runner whose state is rebuilt from stored node dicts (see tree.py). Pending nodes
        (in flight when the session stopped) are evaluated again when `run()` starts."""
        return cls(problem_source, target, synthesizer, executor, config=config,
                   tree=SearchTree.from_dicts(nodes), next_seq=next_seq, **kwargs)

    # -- control (thread-safe) --------------------------------------------------------------
    def pause(self) -> None:
        if not self._pause.is_set() and self.status == RUNNING:
            self._pause.set()
            self._set_status(PAUSED, "paused by request")
        self._wake.set()

    def resume(self) -> None:
        if self._pause.is_set():
            self._pause.clear()
            self._set_status(RUNNING, "resumed")
        self._outage_probe_now()
        self._wake.set()

    def cancel(self) -> None:
        self._cancel.set()
        self._wake.set()

    @property
    def evaluated(self) -> int:
        return sum(1 for n in self.tree.nodes.values() if n.evaluated)

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> SearchOutcome:
        self._started = self.config.clock_started or time.monotonic()
        self._set_status(RUNNING, "started")
        try:
            self._family = self._check_covered()
            self._prepare_skills()
            if not self.tree.nodes:
                self._make_root()
            for node in sorted(self.tree.nodes.values(), key=lambda n: n.id):
                if node.status == PENDING and node.id not in self._futures:
                    self._submit([node])
            reason = self._loop()
        except NotCoveredError as exc:
            return self._finish(FAILED, str(exc))
        except Exception as exc:  # keep the stored tree; report why the session stopped
            self.events.log(f"search failed: {type(exc).__name__}: {exc}", "error")
            return self._finish(FAILED, f"{type(exc).__name__}: {exc}")
        finally:
            if self._synth_pool is not None:  # a request still in flight is abandoned
                self._synth_pool.shutdown(wait=False, cancel_futures=True)
        status = CANCELLED_STATUS if reason == "cancelled" else COMPLETED
        return self._finish(status, reason)

    def _check_covered(self) -> str:
        check = getattr(self.synthesizer, "check_covered", None)
        family = check(self.problem_source) if check else ""
        if not family:
            from search_engine.problems import guess_family

            family = self.config.family or guess_family(self.problem_source)
        return family

    def _prepare_skills(self) -> None:
        from search_engine.problems import guess_family

        families = [self.config.family, guess_family(self.problem_source), self._family]
        self.skills.prepare(self.synthesizer, self.problem_source, families, self.target.name)
        if self.skills.failed:
            self.events.log(f"skills could not be read: {self.skills.failed}", "warning")

    def _loop(self) -> str:
        stop_reason = ""
        while True:
            if self._cancel.is_set():
                self._stop_evaluations("cancelled")
                return "cancelled"
            if not self._pause.is_set():
                self._land_finished()
            now_reason = stop_reason or self._stop_reason()
            out_of_time = self._time_limit_reason()
            if out_of_time and (self._pending or self._futures):  # wait for nothing more,
                # even when another stop (the budget) was only waiting for these
                stop_reason = now_reason = out_of_time
                if self._pending:
                    self._abandon_pending()
                if self._futures:
                    self._stop_evaluations(now_reason)
            if not self._pending:  # a request in flight may still add (or not add) nodes
                stop_reason = now_reason
            if not now_reason and self._async and self._empty_streak >= 4 \
                    and not self._pending and not self._futures:
                stop_reason = now_reason = self._stop_reason() or self._exhausted_reason()
            blocked = self._pause.is_set() or self._outage_waiting()
            hold_latest = (self.config.ordered and not now_reason and not blocked
                           and not self._warming_up())
            if not now_reason and not blocked and self._can_select():
                if not self._step():
                    hold_latest = False  # nothing new to select: let the results in
                    if not self._futures and not self._pending:
                        # a step stopped by the clock (a screening cut short) made nothing
                        stop_reason = self._stop_reason() or self._exhausted_reason()
            if self._futures:
                self._collect(hold_latest)
            elif stop_reason and not self._pending:
                return stop_reason
            elif self._pending and not self._pause.is_set():
                wait([p.future for p in self._pending], timeout=0.25,
                     return_when=FIRST_COMPLETED)
            else:
                self._wake.wait(0.2)
                self._wake.clear()

    def _abandon_pending(self) -> None:
        for pending in list(self._pending):
            pending.future.cancel()
            self._pending.remove(pending)
            self._drop_batch(pending.batch)
        self.events.log("stopped waiting for the synthesis requests in flight", "warning")

    def _exhausted_reason(self) -> str:
        if self._synthesis_error:
            return f"synthesis failed: {self._synthesis_error}"
        return "exhausted: the synthesizer has no new candidates"

    def _running(self) -> int:
        return sum(1 for f in self._futures.values() if not f.done())

    def _warming_up(self) -> bool:
        """The first evaluation runs alone: it measures the reference and its baselines once
        (the executor caches them) before candidates are evaluated in parallel."""
        return not any(n.evaluated for n in self.tree.nodes.values())

    def _pending_children(self) -> int:
        return sum(p.count for p in self._pending)

    def _can_select(self) -> bool:
        if self._running() + self._pending_children() >= self.config.max_in_flight:
            return False
        if (self._futures or self._pending) and self._warming_up():
            return False
        if self._pending and (self.config.ordered or self._outage is not None
                              or len(self._pending) >= self.config.max_synthesis_in_flight):
            return False
        if not self.config.ordered:
            return True
        older = self._batches[:-1]
        return all(i in self._applied for batch in older for i in batch)

    def _remaining(self) -> int:
        return self.config.budget - self.evaluated - len(self._futures) - self._pending_children()

    def _stop_reason(self) -> str:
        cfg = self.config
        if self.evaluated + len(self._futures) + self._pending_children() >= cfg.budget:
            return f"budget of {cfg.budget} evaluations reached"
        if self._time_limit_reason():
            return self._time_limit_reason()
        if cfg.max_cost_usd is not None and self._cost >= cfg.max_cost_usd:
            return f"cost limit of ${cfg.max_cost_usd:g} reached"
        if cfg.plateau_window and self._since_improvement >= cfg.plateau_window:
            return (f"plateau: no improvement above {cfg.plateau_epsilon:g} in "
                    f"{cfg.plateau_window} evaluations")
        return ""

    def _time_limit_reason(self) -> str:
        limit = self.config.max_seconds
        if limit is not None and time.monotonic() - self._started >= limit:
            return f"time limit of {limit:g} s reached"
        return ""

    def _seconds_left(self) -> float | None:
        """Wall-clock seconds before the time limit; None without one."""
        limit = self.config.max_seconds
        return None if limit is None else limit - (time.monotonic() - self._started)

    def _rng(self, salt: str) -> random.Random:
        return random.Random(f"{self.config.seed}:{len(self.tree.nodes)}:{salt}")

    def _step(self) -> bool:
        """Select and synthesize one step; False when nothing new could be made. A remote
        synthesizer's answer lands later (`_land_finished`); an inline one lands here."""
        for attempt in range(4):  # a fully explored node: select again (policy is random)
            if self._time_limit_reason():  # the last attempt ran out the clock
                return False
            expansion = self.policy.select(self.tree, self._rng(f"select{attempt}"))
            if expansion is None:
                return False
            for line in expansion.tags.pop("logs", []):
                self.events.log(line)
            count = min(self.config.children_per_step, self._remaining(),
                        self.config.max_in_flight - self._running() - self._pending_children())
            if self._warming_up():
                count = min(count, 1)
            if count <= 0:
                return True
            pending = self._launch(expansion, count)
            if self._async:
                return True
            if self._land(pending) or self._outage is not None:
                return True
        return False

    def _make_root(self) -> None:
        root = self.tree.add(Node(0, None, 0, self.problem_source,
                                  {"synthesizer": "reference", "transformation": "",
                                   "params": {}, "prompt": ""}, status=REFERENCE))
        self.events.emit("node_created", root.to_dict())

    def _set_status(self, status: str, reason: str, **extra: Any) -> None:
        self.status = status
        self.events.emit("status_changed", {"status": status, "reason": reason,
                                            "evaluated": self.evaluated,
                                            "screened": self.screened, **extra})

    def _finish(self, status: str, reason: str) -> SearchOutcome:
        stop = stop_code(status, reason)
        self._set_status(status, reason, stop=stop)
        best = self.tree.best()
        return SearchOutcome(
            status=status, reason=reason, stop=stop, evaluated=self.evaluated,
            best=best.to_dict() if best else None, nodes=self.tree.to_dicts(),
            cost_usd=round(self._cost, 6), elapsed_s=round(time.monotonic() - self._started, 3),
            baselines=self.tree.root.baselines if self.tree.nodes else {},
            usage=dict(self._usage), screened=self.screened)


def run_search(problem_source: str, target, synthesizer, executor: Executor,
               config: SearchConfig | None = None, **kwargs) -> SearchOutcome:
    """One call: build a runner and run it to the end."""
    return SearchRunner(problem_source, target, synthesizer, executor, config, **kwargs).run()
