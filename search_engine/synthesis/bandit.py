"""Several models in one search: a bandit spreads requests by measured yield per cost.

As ShinkaEvolve's bandit over LLMs: every model (arm) is tried first; then each request goes
to the arm with the best upper confidence bound on its yield (1 for a correct node that beats
its parent, 0.5 for a correct one, 0 otherwise), divided by its relative cost (its mean cost
per observation over the mean of all arms; free arms count as cheap as the cheapest paid
one). An arm whose endpoint is down is rested (`cooldown_s`) while the others carry on; only
when every arm fails does the search see a transient error and pause.
"""

from __future__ import annotations

import math
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

from search_engine.synthesis.base import Proposal, SynthesisError, SynthesisRequest


@dataclass
class Arm:
    model: str
    pulls: int = 0
    observations: int = 0
    value: float = 0.0
    cost_usd: float = 0.0
    down_until: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "pulls": self.pulls, "observations": self.observations,
                "value": round(self.value, 4), "cost_usd": round(self.cost_usd, 6)}


class ModelBandit:
    def __init__(self, models: list[str], exploration: float = 1.0,
                 clock=time.monotonic):
        if not models:
            raise ValueError("the bandit needs at least one model")
        self.arms = {m: Arm(m) for m in models}
        self.exploration = exploration
        self.clock = clock
        self._lock = threading.Lock()

    def choose(self, rng: random.Random, exclude: set[str] = frozenset()) -> str | None:
        with self._lock:
            now = self.clock()
            arms = [a for a in self.arms.values() if a.model not in exclude]
            up = [a for a in arms if a.down_until <= now] or arms
            if not up:
                return None
            untried = [a for a in up if a.observations == 0 and a.pulls == 0]
            if untried:
                arm = untried[0]
            else:
                arm = max(up, key=lambda a: (self.score(a), rng.random()))
            arm.pulls += 1
            return arm.model

    def score(self, arm: Arm) -> float:
        n = max(arm.observations, 1)
        total = sum(max(a.observations, 1) for a in self.arms.values())
        mean_value = arm.value / n
        bonus = self.exploration * math.sqrt(2 * math.log(max(total, 2)) / n)
        costs = [a.cost_usd / max(a.observations, 1) for a in self.arms.values()
                 if a.cost_usd > 0]
        if not costs:
            return mean_value + bonus
        floor = min(costs)
        mean_cost = sum(costs) / len(costs)
        own = max(arm.cost_usd / n, floor)
        return (mean_value + bonus) / (own / mean_cost)

    def observe(self, model: str, value: float, cost_usd: float) -> None:
        with self._lock:
            arm = self.arms.get(model)
            if arm is not None:
                arm.observations += 1
                arm.value += value
                arm.cost_usd += cost_usd

    def rest(self, model: str, seconds: float) -> None:
        with self._lock:
            if model in self.arms:
                self.arms[model].down_until = self.clock() + seconds

    def to_dict(self) -> list[dict[str, Any]]:
        return [a.to_dict() for a in self.arms.values()]


class MultiLLMSynthesizer:
    """LLM synthesizers (one per model or endpoint) behind one bandit; each proposal's
    origin names the model that wrote it (`Proposal.model`, params["model"])."""

    name = "llm"
    supports_crossover = True
    uses_context = True
    remote = True

    def __init__(self, synthesizers: list, cooldown_s: float = 60.0, exploration: float = 1.0,
                 clock=time.monotonic):
        if not synthesizers:
            raise ValueError("no LLM synthesizers given")
        self.by_model = {s.model: s for s in synthesizers}
        self.bandit = ModelBandit(list(self.by_model), exploration=exploration, clock=clock)
        self.cooldown_s = cooldown_s

    @property
    def model(self) -> str:
        return ",".join(self.by_model)

    def propose(self, request: SynthesisRequest, n: int, rng: random.Random) -> list[Proposal]:
        tried: set[str] = set()
        errors: list[SynthesisError] = []
        wasted: dict[str, Any] = {}
        while len(tried) < len(self.by_model):
            model = self.bandit.choose(rng, exclude=tried)
            if model is None:
                break
            tried.add(model)
            try:
                proposals = self.by_model[model].propose(request, n, rng)
            except SynthesisError as exc:
                errors.append(exc)
                from search_engine.synthesis.llm import add_usage

                add_usage(wasted, exc.usage)
                if exc.transient:  # rest that endpoint, ask another model
                    self.bandit.observe(model, 0.0, float(exc.usage.get("cost_usd") or 0.0))
                    self.bandit.rest(model, self.cooldown_s)
                    continue
                # the search observes this failure (it names the model)
                raise SynthesisError(str(exc), usage=wasted, status_code=exc.status_code,
                                     model=model) from exc
            if proposals and wasted:
                from search_engine.synthesis.llm import add_usage

                add_usage(proposals[0].usage, wasted)
            return proposals
        last = errors[-1] if errors else SynthesisError("no model available")
        raise SynthesisError("every model failed: " + "; ".join(f"{e.model}: {e}" for e in errors),
                             usage=wasted, transient=any(e.transient for e in errors),
                             status_code=last.status_code, model="")

    def observe(self, model: str, value: float, cost_usd: float) -> None:
        self.bandit.observe(model, value, cost_usd)
