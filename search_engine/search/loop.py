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

Termination: ``budget`` evaluations, ``max_seconds`` wall clock, ``max_cost_usd`` (LLM), a
plateau (no best-reward gain above ``plateau_epsilon`` in ``plateau_window`` evaluations),
the synthesizer running out of new candidates, or cancel().
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from search_engine.evaluation.result import EvaluationResult
from search_engine.hardware import HardwareTarget, get_target
from search_engine.protocols import (
    ContextPassage, ContextProvider, EvaluationRequest, Executor, NullContextProvider,
)
from search_engine.search import credit
from search_engine.search.events import EventEmitter
from search_engine.search.memory import memory_view
from search_engine.search.policies import Expansion, make_policy
from search_engine.search.tree import CANCELLED, PENDING, REFERENCE, Node, SearchTree
from search_engine.synthesis.base import NodeView, NotCoveredError, SynthesisRequest

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def context_query(view: NodeView, family: str, target: HardwareTarget) -> tuple[str, list[str]]:
    """A retrieval query keyed on the node's diagnosis, and the categories to search."""
    hw = target.name.upper()
    status = view.status
    bottleneck = view.diagnostics.get("bottleneck", {})
    klass = bottleneck.get("class", "") if isinstance(bottleneck, dict) else str(bottleneck)
    if status == "compile_error":
        return ("Triton compiler guidance: fixing compilation errors, tl.constexpr block "
                "sizes, tl.dot shape and dtype rules", ["compiler"])
    if status in ("runtime_error", "timeout"):
        return ("Triton runtime errors: masks and out-of-bounds accesses, launch grids, "
                "illegal memory access", ["compiler", "debugging"])
    if status == "incorrect":
        return ("numerical correctness in Triton kernels: masking reductions, accumulation "
                "precision, tf32 versus ieee dot products", ["correctness"])
    if status == "rejected_lazy" or (view.coverage is not None and view.coverage < 0.5):
        return ("put the real work in your kernel: fuse the computation into your own Triton "
                "kernel instead of calling torch operators", ["fusion"])
    if "memory" in klass:
        return (f"memory hierarchy on {hw}: HBM bandwidth, coalesced and vectorized loads, "
                f"L2 cache reuse, shared memory", ["memory"])
    if "compute" in klass:
        return (f"compute throughput on {hw}: tensor cores, tl.dot tiling, software "
                f"pipelining stages, tf32 and bf16", ["compute"])
    if "latency" in klass or "occupancy" in klass:
        return (f"occupancy and latency on {hw}: warps per block, registers, shared memory "
                f"per block, grid size and launch overhead", ["occupancy"])
    return f"writing fast Triton kernels for {family} on {hw}", ["general"]


class SearchRunner:
    def __init__(self, problem_source: str, target: HardwareTarget | str, synthesizer,
                 executor: Executor, config: SearchConfig | None = None,
                 context: ContextProvider | None = None,
                 on_event: Callable[[dict[str, Any]], None] | None = None,
                 session: str = "local", tree: SearchTree | None = None, next_seq: int = 1,
                 clock: Callable[[], float] = time.time):
        self.problem_source = problem_source
        self.target = get_target(target) if isinstance(target, str) else target
        self.synthesizer = synthesizer
        self.executor = executor
        self.config = config or SearchConfig()
        self.context = context or NullContextProvider()
        self.events = EventEmitter(session, on_event, next_seq=next_seq, clock=clock)
        self.tree = tree or SearchTree()
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
        self._cost = sum(float((n.origin.get("usage") or {}).get("cost_usd") or 0.0)
                         for n in self.tree.nodes.values())
        self._started = 0.0
        self._family = ""
        self._synthesis_error = ""

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
        self._wake.set()

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
        status = CANCELLED_STATUS if reason == "cancelled" else COMPLETED
        return self._finish(status, reason)

    def _check_covered(self) -> str:
        check = getattr(self.synthesizer, "check_covered", None)
        return check(self.problem_source) if check else ""

    def _loop(self) -> str:
        stop_reason = ""
        while True:
            if self._cancel.is_set():
                self._cancel_pending()
                return "cancelled"
            if not stop_reason:
                stop_reason = self._stop_reason()
            hold_latest = (self.config.ordered and not stop_reason and not self._pause.is_set()
                           and not self._warming_up())
            if hold_latest and self._can_select():
                if not self._step():
                    hold_latest = False  # nothing new to select: let the results in
                    if not self._futures:
                        stop_reason = self._exhausted_reason()
            elif not stop_reason and not self._pause.is_set() and self._can_select():
                if not self._step() and not self._futures:
                    stop_reason = self._exhausted_reason()
            if self._futures:
                self._collect(hold_latest)
            elif stop_reason:
                return stop_reason
            elif self._pause.is_set():
                self._wake.wait(0.2)
                self._wake.clear()

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

    def _can_select(self) -> bool:
        if self._running() >= self.config.max_in_flight:
            return False
        if self._futures and self._warming_up():
            return False
        if not self.config.ordered:
            return True
        older = self._batches[:-1]
        return all(i in self._applied for batch in older for i in batch)

    def _remaining(self) -> int:
        return self.config.budget - self.evaluated - len(self._futures)

    def _stop_reason(self) -> str:
        cfg = self.config
        if self.evaluated + len(self._futures) >= cfg.budget:
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
        """Select, synthesize and submit one step; False when nothing new could be made."""
        for attempt in range(4):  # a fully explored node: select again (policy is random)
            expansion = self.policy.select(self.tree, self._rng(f"select{attempt}"))
            if expansion is None:
                return False
            for line in expansion.tags.pop("logs", []):
                self.events.log(line)
            count = min(self.config.children_per_step, self._remaining(),
                        self.config.max_in_flight - self._running())
            if self._warming_up():
                count = min(count, 1)
            if count <= 0:
                return True
            nodes = self._expand(expansion, count)
            if nodes:
                self._submit(nodes)
                return True
        return False

    def _expand(self, expansion: Expansion, count: int) -> list[Node]:
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
        try:
            proposals = self.synthesizer.propose(request, count, self._rng("propose"))
        except NotCoveredError:
            raise
        except Exception as exc:  # an endpoint that keeps failing: log, try another step
            self._synthesis_error = f"{type(exc).__name__}: {exc}"
            self.events.log(f"synthesis failed for node {parent.id}: {exc}", "warning")
            return []
        self._synthesis_error = ""
        nodes = []
        for proposal in proposals[:count]:
            origin = proposal.origin(getattr(self.synthesizer, "name", "synthesizer"))
            origin.update(memory_mode=memory.mode, context_query=query,
                          context=[{"document": p.document, "page": p.page, "score": p.score,
                                    "kind": p.kind} for p in passages],
                          second_parent_id=expansion.second_parent_id, **expansion.tags)
            self._cost += float(proposal.usage.get("cost_usd") or 0.0)
            node = self.tree.add(Node(self.tree.new_id(), parent.id, parent.depth + 1,
                                      proposal.source, origin))
            self.events.emit("node_created", node.to_dict())
            nodes.append(node)
        return nodes

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

    def _submit(self, nodes: list[Node]) -> None:
        for node in nodes:
            request = EvaluationRequest(
                problem_source=self.problem_source, candidate_source=node.source,
                target=self.target.name, precision_policy=self.config.precision_policy,
                timeout_s=self.config.eval_timeout_s)
            future = self.executor.submit(request)
            future.add_done_callback(lambda _f: self._wake.set())
            self._futures[node.id] = future
        self._batches.append([n.id for n in nodes])

    def _collect(self, hold_latest: bool = False) -> None:
        """Apply finished results. Ordered mode applies them in creation order and holds the
        latest step's results until the next step is selected, so every selection sees
        exactly the steps before the previous one, whatever the timing."""
        running = [f for f in self._futures.values() if not f.done()]
        if running:
            wait(running, timeout=0.25, return_when=FIRST_COMPLETED)
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
        self._applied.add(node.id)
        changed = credit.update_credit(self.tree, self.config.gamma)
        payload = node.to_dict()
        payload["advantages"] = {str(k): v for k, v in changed.items()}
        self.events.emit("node_evaluated", payload)
        self._record_baselines(result)
        for line in self.policy.on_applied(self.tree, node):
            self.events.log(line)
        self._track_best(node)

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

    def _set_status(self, status: str, reason: str) -> None:
        self.status = status
        self.events.emit("status_changed", {"status": status, "reason": reason,
                                            "evaluated": self.evaluated})

    def _finish(self, status: str, reason: str) -> SearchOutcome:
        self._set_status(status, reason)
        best = self.tree.best()
        return SearchOutcome(
            status=status, reason=reason, evaluated=self.evaluated,
            best=best.to_dict() if best else None, nodes=self.tree.to_dicts(),
            cost_usd=round(self._cost, 6), elapsed_s=round(time.monotonic() - self._started, 3),
            baselines=self.tree.root.baselines if self.tree.nodes else {})


def run_search(problem_source: str, target, synthesizer, executor: Executor,
               config: SearchConfig | None = None, **kwargs) -> SearchOutcome:
    """One call: build a runner and run it to the end."""
    return SearchRunner(problem_source, target, synthesizer, executor, config, **kwargs).run()
