"""Evaluation for the search loop: submitting nodes to the executor and applying their
results to the tree (`EvaluationSteps`, mixed into `SearchRunner`)."""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, wait

from search_engine.evaluation.result import EvaluationResult
from search_engine.protocols import EvaluationRequest
from search_engine.search import credit
from search_engine.search.policies import record_move_effect
from search_engine.search.tree import CANCELLED, Node


class EvaluationSteps:
    """SearchRunner's evaluation side: submit nodes to the executor, collect and apply their
    results in order, update credit, baselines and the best node."""

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
                self._submitted_at[node.id] = time.monotonic()
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
                self._timed(node_id, self._done[node_id])
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

    def _timed(self, node_id: int, result: EvaluationResult) -> None:
        """Keep how long a full evaluation took (submit to result), for screening deadlines;
        a cancelled or infrastructure-failed one says nothing about the next."""
        submitted = self._submitted_at.pop(node_id, None)
        if submitted is not None and result.status not in ("cancelled",) \
                and not result.message.startswith("the executor failed"):
            self._evaluation_seconds.append(time.monotonic() - submitted)

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
                          "method": eager.method, "target": result.target,
                          "precision": eager.precision,
                          "errors": {"eager": eager.error,
                                     "compile": compiled.error if compiled else None}}
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

    def _stop_evaluations(self, why: str) -> None:
        """End every evaluation in flight now (a time limit, a cancel): results already in
        are applied (the best so far counts them), the others are cancelled through the
        executor, which kills their sandboxes, and their nodes say why."""
        for node_id, future in list(self._futures.items()):
            if future.done() and node_id not in self._done:
                self._done[node_id] = self._result_of(future)
                self._timed(node_id, self._done[node_id])
        for node_id in sorted(self._done):
            self._futures.pop(node_id, None)
            self._apply(self.tree.nodes[node_id], self._done.pop(node_id))
        cancel = getattr(self.executor, "cancel", None)
        for node_id, future in sorted(self._futures.items()):
            if cancel is not None:
                cancel(future)
            else:
                future.cancel()
            node = self.tree.nodes[node_id]
            node.status = CANCELLED
            node.origin["cancelled"] = why
            self.events.emit("node_evaluated", {**node.to_dict(), "advantages": {}})
        self._futures.clear()
