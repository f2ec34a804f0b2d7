"""Synthesis for the search loop: the retrieval query keyed on a node's diagnosis, and the
steps that ask the synthesizer for children and land its answers as nodes (`SynthesisSteps`,
mixed into `SearchRunner`)."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from search_engine.hardware import HardwareTarget
from search_engine.protocols import ContextPassage
from search_engine.search import categories as cats
from search_engine.search.memory import memory_view
from search_engine.search.policies import Expansion
from search_engine.search.tree import PENDING, PRUNED, SCREENED, Node
from search_engine.synthesis.base import NodeView, NotCoveredError, Proposal, SynthesisRequest


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


class SynthesisSteps:
    """SearchRunner's synthesis side: ask the synthesizer for a step's children (inline or in
    a thread pool), turn its answer into nodes, count what it cost, and handle failures."""

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
        asked = self._proposal_count(count)  # a family to screen, or the children
        drawn = self.skills.children(self.synthesizer, request, count)
        if drawn:  # the first children come from skills, inline
            pending.future = Future()
            pending.future.set_result(drawn)
        elif self._async:
            if self._synth_pool is None:
                self._synth_pool = ThreadPoolExecutor(
                    max_workers=max(1, self.config.max_synthesis_in_flight),
                    thread_name_prefix="synthesis")
            pending.future = self._synth_pool.submit(self.synthesizer.propose, request, asked,
                                                     rng)
            pending.future.add_done_callback(lambda _f: self._wake.set())
        else:
            pending.future = Future()
            try:
                pending.future.set_result(self.synthesizer.propose(request, asked, rng))
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
        pruned = [p for p in proposals if p.pruned]
        if self._screening():  # a family of dozens: a step's worth shown, the rest counted
            if len(pruned) > pending.count:
                self.events.log(f"{len(pruned) - pending.count} more configurations of node "
                                f"{pending.parent_id} do not fit the target (not shown)")
            pruned = pruned[:pending.count]
        for proposal in pruned:  # shown, never evaluated
            self._node_from(proposal, pending)
        proposals = [p for p in proposals if not p.pruned]
        nodes = self._screened_nodes(proposals, pending)
        if nodes is None:
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

    def _screened_nodes(self, proposals: list[Proposal],
                        pending: "_Pending") -> list[Node] | None:
        """With screening (`ScreeningSteps`): every screened proposal a node, the finalists
        pending for full evaluation (returned), the rest `screened`. None when this step
        is not screened (too few proposals, or the screening failed)."""
        finalists = self._finalist_count(pending.count)
        if not self._screens_now() or len(proposals) <= finalists:
            return None
        family = proposals[:self.config.screen]
        screens = self._screen_family(pending.parent_id, family, finalists)
        if not screens:
            return [] if screens is None else None
        nodes = []
        for proposal, screen in zip(family, screens):
            if screen.get("skipped") and not screen["finalist"]:  # never screened: no node
                self._add_usage(proposal.usage)
                continue
            node = self._node_from(proposal, pending, screen)
            if screen["finalist"]:
                nodes.append(node)
        for proposal in proposals[len(family):]:
            self._add_usage(proposal.usage)
        return nodes

    def _drop_batch(self, batch: list[int]) -> None:
        for i, b in enumerate(self._batches):
            if b is batch:
                del self._batches[i]
                return

    def _node_from(self, proposal: Proposal, pending: "_Pending",
                   screen: dict[str, Any] | None = None) -> Node:
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
        status = PRUNED if proposal.pruned else PENDING
        if screen is not None:
            origin["screen"] = screen
            if not screen["finalist"]:
                origin["screened"], status = True, SCREENED
        self._add_usage(proposal.usage)
        node = self.tree.add(Node(self.tree.new_id(), parent.id, parent.depth + 1,
                                  proposal.source, origin, status=status))
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
