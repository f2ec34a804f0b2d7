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

Termination: ``budget`` evaluations, ``max_seconds`` wall clock, ``max_cost_usd`` (LLM), a
plateau (no best-reward gain above ``plateau_epsilon`` in ``plateau_window`` evaluations),
the synthesizer running out of new candidates, or cancel().
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from search_engine.evaluation.result import EvaluationResult
from search_engine.hardware import HardwareTarget, get_target
from search_engine.protocols import (
    ContextPassage, ContextProvider, EvaluationRequest, Executor, NullContextProvider,
)
from search_engine.search import categories as cats
from search_engine.search import credit
from search_engine.search.events import EventEmitter
from search_engine.search.memory import memory_view
from search_engine.search.policies import Expansion, make_policy, record_move_effect
from search_engine.search.skill_priors import SkillGuide
from search_engine.search.tree import CANCELLED, PENDING, REFERENCE, Node, SearchTree
from search_engine.synthesis.base import NodeView, NotCoveredError, Proposal, SynthesisRequest

RUNNING, PAUSED, COMPLETED, CANCELLED_STATUS, FAILED = (
    "running", "paused", "completed", "cancelled", "failed")


@dataclass
class SearchConfig:
    strategy: str = "mcts"  # mcts | evolution
    budget: int = 12  # evaluations
    seed: int = 0
    children_per_step: int = 2
    max_in_flight: int = 4
    ordered: bool = True
    max_seconds: float | None = None
    max_cost_usd: float | None = None
    plateau_window: int | None = None
    plateau_epsilon: float = 0.02
    gamma: float = credit.DEFAULT_GAMMA
    precision_policy: str = "strict"
    eval_timeout_s: float = 180.0
    context_k: int = 4
    policy_options: dict[str, Any] = field(default_factory=dict)
    family: str = ""  # the problem's operator family ("" = guessed from the source)
    async_synthesis: bool | None = None  # None: when the synthesizer is `remote` (LLM)
    max_synthesis_in_flight: int = 2  # unordered mode; ordered mode keeps one
    outage_failures: int = 1  # failed expansions in a row (each retried) before pausing
    outage_retry_s: float = 30.0  # first retry after an outage; doubles up to the max
    outage_max_retry_s: float = 300.0
    spent_cost_usd: float = 0.0  # already spent before this run (a resumed session)

    def __post_init__(self) -> None:
        if self.budget < 1:
            raise ValueError("budget must be at least 1 evaluation")
        if self.children_per_step < 1 or self.max_in_flight < 1:
            raise ValueError("children_per_step and max_in_flight must be at least 1")


@dataclass
class SearchOutcome:
    status: str
    reason: str
    evaluated: int
    best: dict[str, Any] | None
    nodes: list[dict[str, Any]]
    cost_usd: float
    elapsed_s: float
    baselines: dict[str, Any]
    usage: dict[str, Any] = field(default_factory=dict)  # tokens and requests, failed ones too

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def context_query(view: NodeView, family: str, target: HardwareTarget) -> tuple[str, list[str]]:
    """A retrieval query keyed on the node's diagnosis, and the knowledge-base categories to
    search (the shared vocabulary of search_engine/search/categories.py)."""
    hw = target.name.upper()
    family = family or "this operator"
    status = view.status
    bottleneck = view.diagnostics.get("bottleneck", {})
    klass = bottleneck.get("class", "") if isinstance(bottleneck, dict) else str(bottleneck)
    if status == "compile_error":
        return ("Triton compiler guidance: fixing compilation errors, tl.constexpr block "
                "sizes, tl.dot shape and dtype rules", cats.categories_for("compile"))
    if status in ("runtime_error", "timeout"):
        return ("Triton runtime errors: masks and out-of-bounds accesses, launch grids, "
                "illegal memory access", cats.categories_for("runtime"))
    if status == "incorrect":
        return ("numerical correctness in Triton kernels: masking reductions, accumulation "
                "precision, tf32 versus ieee dot products", cats.categories_for("correctness"))
    if status == "rejected_lazy" or (view.coverage is not None and view.coverage < 0.5):
        return ("put the real work in your kernel: fuse the computation into your own Triton "
                "kernel instead of calling torch operators", cats.categories_for("fusion"))
    keyed = cats.bottleneck_query(klass, hw, family)
    if keyed is not None:
        return keyed[0], cats.categories_for(keyed[1])
    return f"writing fast Triton kernels for {family} on {hw}", cats.categories_for("general")


@dataclass
class _Pending:
    """One step's synthesis in flight."""

    expansion: Expansion
    parent_id: int
    memory_mode: str
    query: str
    passages: list[ContextPassage]
    count: int
    batch: list[int]
    future: Future | None = None


class SearchRunner:
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
        self._batches: list[list[int]] = []
        self._applied: set[int] = {n.id for n in self.tree.nodes.values()
                                   if n.evaluated or n.status in (REFERENCE, CANCELLED)}
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
        outage = self._outage
        if outage is not None and not outage.get("probe_requested"):
            outage["probe_requested"] = True  # someone asked: try the endpoint now, once
            outage["retry_at"] = time.monotonic()
        self._wake.set()

    @property
    def outage(self) -> dict[str, Any] | None:
        """The endpoint outage the search is paused for (None when there is none)."""
        return dict(self._outage) if self._outage else None

    def cancel(self) -> None:
        self._cancel.set()
        self._wake.set()

    @property
    def evaluated(self) -> int:
        return sum(1 for n in self.tree.nodes.values() if n.evaluated)

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> SearchOutcome:
        self._started = time.monotonic()
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
                self._cancel_pending()
                return "cancelled"
            if not self._pause.is_set():
                self._land_finished()
            now_reason = stop_reason or self._stop_reason()
            if now_reason.startswith("time limit") and self._pending:
                self._abandon_pending()  # out of time: do not wait for answers in flight
            if not self._pending:  # a request in flight may still add (or not add) nodes
                stop_reason = now_reason
            if not now_reason and self._async and self._empty_streak >= 4 \
                    and not self._pending and not self._futures:
                stop_reason = now_reason = self._exhausted_reason()
            blocked = self._pause.is_set() or self._outage_waiting()
            hold_latest = (self.config.ordered and not now_reason and not blocked
                           and not self._warming_up())
            if not now_reason and not blocked and self._can_select():
                if not self._step():
                    hold_latest = False  # nothing new to select: let the results in
                    if not self._futures and not self._pending:
                        stop_reason = self._exhausted_reason()
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

    def _outage_waiting(self) -> bool:
        """Paused for an outage and not yet time to try the endpoint again."""
        outage = self._outage
        if outage is None:
            return False
        return bool(self._pending) or time.monotonic() < outage["retry_at"]

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
        if cfg.max_seconds is not None and time.monotonic() - self._started >= cfg.max_seconds:
            return f"time limit of {cfg.max_seconds:g} s reached"
        if cfg.max_cost_usd is not None and self._cost >= cfg.max_cost_usd:
            return f"cost limit of ${cfg.max_cost_usd:g} reached"
        if cfg.plateau_window and self._since_improvement >= cfg.plateau_window:
            return (f"plateau: no improvement above {cfg.plateau_epsilon:g} in "
                    f"{cfg.plateau_window} evaluations")
        return ""

    def _rng(self, salt: str) -> random.Random:
        return random.Random(f"{self.config.seed}:{len(self.tree.nodes)}:{salt}")

    def _step(self) -> bool:
        """Select and synthesize one step; False when nothing new could be made. A remote
        synthesizer's answer lands later (`_land_finished`); an inline one lands here."""
        for attempt in range(4):  # a fully explored node: select again (policy is random)
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

    def _launch(self, expansion: Expansion, count: int) -> "_Pending":
        parent = self.tree.nodes[expansion.parent_id]
        view = parent.view()
        memory = memory_view(self.tree, parent.id, expansion.memory_mode)
        passages, query = self._retrieve(view)
        second = self.tree.nodes.get(expansion.second_parent_id) \
            if expansion.second_parent_id is not None else None
        request = SynthesisRequest(
            problem_source=self.problem_source, target=self.target, parent=view, memory=memory,
            context=passages, context_query=query,
            precision_policy=self.config.precision_policy,
            second_parent=second.view() if second else None, known_sources=self.tree.sources())
        rng = self._rng("propose")
        pending = _Pending(expansion=expansion, parent_id=parent.id, memory_mode=memory.mode,
                           query=query, passages=passages, count=count, batch=[])
        self._batches.append(pending.batch)  # the step's place in the order, filled on landing
        drawn = self.skills.children(self.synthesizer, request, count)
        if drawn:  # the first children come from skills, inline
            pending.future = Future()
            pending.future.set_result(drawn)
        elif self._async:
            if self._synth_pool is None:
                self._synth_pool = ThreadPoolExecutor(
                    max_workers=max(1, self.config.max_synthesis_in_flight),
                    thread_name_prefix="synthesis")
            pending.future = self._synth_pool.submit(self.synthesizer.propose, request, count,
                                                     rng)
            pending.future.add_done_callback(lambda _f: self._wake.set())
        else:
            pending.future = Future()
            try:
                pending.future.set_result(self.synthesizer.propose(request, count, rng))
            except NotCoveredError:
                raise
            except Exception as exc:
                pending.future.set_exception(exc)
        self._pending.append(pending)
        return pending

    def _land_finished(self) -> None:
        for pending in [p for p in self._pending if p.future.done()]:
            self._land(pending)

    def _land(self, pending: "_Pending") -> int:
        """Turn a finished synthesis into nodes (submitted for evaluation); the number made."""
        self._pending.remove(pending)
        try:
            proposals = pending.future.result()
        except NotCoveredError:
            raise
        except Exception as exc:  # an endpoint that keeps failing: pause or try another step
            self._drop_batch(pending.batch)
            self._synthesis_failed(pending, exc)
            return 0
        self._synthesis_error = ""
        self._failures = 0
        if self._outage is not None:
            self._outage_over()
        nodes = []
        for proposal in proposals[:pending.count]:
            nodes.append(self._node_from(proposal, pending))
        for proposal in proposals[pending.count:]:  # answered but unused: still paid for
            self._add_usage(proposal.usage)
        if not nodes:
            self._drop_batch(pending.batch)
            self._empty_streak += 1
            return 0
        self._empty_streak = 0
        self._submit(nodes, batch=pending.batch)
        return len(nodes)

    def _drop_batch(self, batch: list[int]) -> None:
        for i, b in enumerate(self._batches):
            if b is batch:
                del self._batches[i]
                return

    def _node_from(self, proposal: Proposal, pending: "_Pending") -> Node:
        parent = self.tree.nodes[pending.parent_id]
        origin = proposal.origin(getattr(self.synthesizer, "name", "synthesizer"))
        sent_passages = (proposal.sent or {}).get("passages")
        origin.update(memory_mode=pending.memory_mode, context_query=pending.query,
                      context=sent_passages if sent_passages is not None else [
                          {"document": p.document, "page": p.page, "score": p.score,
                           "kind": p.kind} for p in pending.passages],
                      second_parent_id=pending.expansion.second_parent_id,
                      **pending.expansion.tags)
        origin.update(self.skills.origin_tags(proposal.source, pending.passages))
        self._add_usage(proposal.usage)
        node = self.tree.add(Node(self.tree.new_id(), parent.id, parent.depth + 1,
                                  proposal.source, origin))
        self.events.emit("node_created", node.to_dict())
        return node

    def _add_usage(self, usage: dict[str, Any] | None) -> None:
        usage = usage or {}
        self._cost += float(usage.get("cost_usd") or 0.0)
        for key in ("prompt_tokens", "completion_tokens", "requests", "failed_requests"):
            self._usage[key] += int(usage.get(key) or 0)
        self._usage["cost_usd"] = round(self._usage["cost_usd"]
                                        + float(usage.get("cost_usd") or 0.0), 8)

    def _synthesis_failed(self, pending: "_Pending", exc: Exception) -> None:
        usage = dict(getattr(exc, "usage", None) or {})
        usage["failed_requests"] = int(usage.get("requests") or 0)
        self._add_usage(usage)
        transient = bool(getattr(exc, "transient", False))
        status_code = getattr(exc, "status_code", None)
        model = getattr(exc, "model", "")
        message = f"{type(exc).__name__}: {exc}"
        self.events.emit("synthesis_failed", {
            "parent_id": pending.parent_id, "error": str(exc)[:1000], "transient": transient,
            "status_code": status_code, "model": model, "usage": usage})
        observe = getattr(self.synthesizer, "observe", None)
        if observe is not None and model:
            observe(model, 0.0, float(usage.get("cost_usd") or 0.0))
        if not transient:
            self._synthesis_error = message
            self._empty_streak += 1
            self.events.log(f"synthesis failed for node {pending.parent_id}: {exc}", "warning")
            return
        self._failures += 1
        if self._failures < self.config.outage_failures and self._outage is None:
            self.events.log(f"the LLM endpoint failed ({exc}); trying again", "warning")
            return
        self._outage_begin(str(exc), status_code)

    def _outage_begin(self, error: str, status_code: int | None) -> None:
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
        outage, self._outage = self._outage, None
        took = time.monotonic() - outage["since"]
        self._set_status(RUNNING, f"the LLM endpoint answers again; resumed after {took:.0f} s",
                         outage_over=True)

    def _retrieve(self, view: NodeView) -> tuple[list[ContextPassage], str]:
        if not getattr(self.synthesizer, "uses_context", False):
            return [], ""
        query, categories = context_query(view, self._family, self.target)
        try:
            return list(self.context.retrieve(query, hardware=self.target.name,
                                              categories=categories,
                                              k=self.config.context_k)), query
        except Exception as exc:  # retrieval is help, not a requirement
            self.events.log(f"context retrieval failed: {exc}", "warning")
            return [], query

    def _submit(self, nodes: list[Node], batch: list[int] | None = None) -> None:
        for node in nodes:
            rejected = node.origin.get("rejected")
            if rejected:  # over a cap: a clear failed node, never run
                future: Future = Future()
                future.set_result(EvaluationResult(
                    status="compile_error", target=self.target.name,
                    precision_policy=self.config.precision_policy,
                    message=f"not evaluated: {rejected}"))
            else:
                request = EvaluationRequest(
                    problem_source=self.problem_source, candidate_source=node.source,
                    target=self.target.name, precision_policy=self.config.precision_policy,
                    timeout_s=self.config.eval_timeout_s)
                future = self.executor.submit(request)
            future.add_done_callback(lambda _f: self._wake.set())
            self._futures[node.id] = future
        if batch is None:
            self._batches.append([n.id for n in nodes])
        else:
            batch.extend(n.id for n in nodes)

    def _collect(self, hold_latest: bool = False) -> None:
        """Apply finished results. Ordered mode applies them in creation order and holds the
        latest step's results until the next step is selected, so every selection sees
        exactly the steps before the previous one, whatever the timing."""
        running = [f for f in self._futures.values() if not f.done()]
        if running:  # a synthesis landing wakes the loop too
            synthesis = [p.future for p in self._pending if not self._pause.is_set()]
            wait(running + synthesis, timeout=0.25, return_when=FIRST_COMPLETED)
        for node_id, future in list(self._futures.items()):
            if future.done() and node_id not in self._done:
                self._done[node_id] = self._result_of(future)
        order = sorted(self._done)
        if self.config.ordered:
            waiting = sorted(i for i in self._futures if i not in self._done)
            order = [i for i in order if not waiting or i < waiting[0]]
            if hold_latest and self._batches:
                latest = set(self._batches[-1])
                order = [i for i in order if i not in latest]
        if not order and not running:  # only held results: never spin
            self._wake.wait(0.05)
            self._wake.clear()
        for node_id in order:
            self._futures.pop(node_id, None)
            self._apply(self.tree.nodes[node_id], self._done.pop(node_id))

    def _result_of(self, future: Future) -> EvaluationResult:
        try:
            return future.result()
        except Exception as exc:  # the executor itself failed (worker lost, ...)
            return EvaluationResult(status="runtime_error", target=self.target.name,
                                    precision_policy=self.config.precision_policy,
                                    message=f"the executor failed: {type(exc).__name__}: {exc}")

    def _apply(self, node: Node, result: EvaluationResult) -> None:
        node.result = result
        node.status = result.status
        record_move_effect(self.tree, node)
        self._applied.add(node.id)
        changed = credit.update_credit(self.tree, self.config.gamma)
        payload = node.to_dict()
        payload["advantages"] = {str(k): v for k, v in changed.items()}
        self.events.emit("node_evaluated", payload)
        self._record_baselines(result)
        for line in self.policy.on_applied(self.tree, node):
            self.events.log(line)
        self._observe(node)
        self._track_best(node)

    def _observe(self, node: Node) -> None:
        """Tell a synthesizer that learns (the model bandit) what its node was worth."""
        observe = getattr(self.synthesizer, "observe", None)
        model = node.origin.get("model")
        if observe is None or not model:
            return
        parent = self.tree.nodes.get(node.parent_id)
        value = 0.0
        if node.is_clean_correct:
            before = parent.reward if parent is not None and parent.is_clean_correct else None
            value = 1.0 if before is None or (node.reward or 0) > before else 0.5
        observe(model, value, float((node.origin.get("usage") or {}).get("cost_usd") or 0.0))

    def _record_baselines(self, result: EvaluationResult) -> None:
        root = self.tree.root
        if root.baselines:
            return
        eager, compiled = result.timing.get("eager"), result.timing.get("compile")
        if eager is None or eager.median_ms is None:
            return
        root.baselines = {"eager_ms": eager.median_ms,
                          "compile_ms": compiled.median_ms if compiled else None,
                          "method": eager.method, "target": result.target}
        self.events.emit("node_evaluated", {**root.to_dict(), "advantages": {}})

    def _track_best(self, node: Node) -> None:
        reward = node.reward if node.is_clean_correct else None
        if reward is not None and reward > self._best_reward_for_plateau + \
                self.config.plateau_epsilon:
            self._best_reward_for_plateau = reward
            self._since_improvement = 0
        else:
            self._since_improvement += 1
        best = self.tree.best()
        if best is not None and best.id != self._best_id:
            previous, self._best_id = self._best_id, best.id
            self.events.emit("best_improved", {
                "node_id": best.id, "reward": best.reward,
                "speedup_vs_eager": best.result.speedup_vs_eager,
                "speedup_vs_compile": best.result.speedup_vs_compile,
                "previous_node_id": previous})

    def _cancel_pending(self) -> None:
        for node_id, future in sorted(self._futures.items()):
            future.cancel()
            node = self.tree.nodes[node_id]
            node.status = CANCELLED
            self.events.emit("node_evaluated", {**node.to_dict(), "advantages": {}})
        self._futures.clear()
        self._done.clear()

    def _make_root(self) -> None:
        root = self.tree.add(Node(0, None, 0, self.problem_source,
                                  {"synthesizer": "reference", "transformation": "",
                                   "params": {}, "prompt": ""}, status=REFERENCE))
        self.events.emit("node_created", root.to_dict())

    def _set_status(self, status: str, reason: str, **extra: Any) -> None:
        self.status = status
        self.events.emit("status_changed", {"status": status, "reason": reason,
                                            "evaluated": self.evaluated, **extra})

    def _finish(self, status: str, reason: str) -> SearchOutcome:
        self._set_status(status, reason)
        best = self.tree.best()
        return SearchOutcome(
            status=status, reason=reason, evaluated=self.evaluated,
            best=best.to_dict() if best else None, nodes=self.tree.to_dicts(),
            cost_usd=round(self._cost, 6), elapsed_s=round(time.monotonic() - self._started, 3),
            baselines=self.tree.root.baselines if self.tree.nodes else {},
            usage=dict(self._usage))


def run_search(problem_source: str, target, synthesizer, executor: Executor,
               config: SearchConfig | None = None, **kwargs) -> SearchOutcome:
    """One call: build a runner and run it to the end."""
    return SearchRunner(problem_source, target, synthesizer, executor, config, **kwargs).run()
