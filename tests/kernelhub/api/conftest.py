"""Fixtures of the API tests: keys of each scope per team, and a populated workspace
(problems, sessions, candidates, reviews, evaluations) in both teams."""

from __future__ import annotations

import hashlib

import pytest
from rest_framework.test import APIClient

RELU2_KERNEL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu2_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu2_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
'''

# Wrong on purpose: forgets the factor 2.
WRONG_KERNEL = RELU2_KERNEL.replace("tl.maximum(x, 0.0) * 2.0", "tl.maximum(x, 0.0)")


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _own_evaluation_executors(monkeypatch):
    """Each test gets its own process executors: work another test left queued (a session
    thread still submitting, a watched job whose rows rolled back) must not hold this
    test's evaluations behind it or answer for an id the database has reused."""
    from kernelhub import placement
    from kernelhub.api import evaluations
    from kernelhub.optimization import executors

    monkeypatch.setattr(executors, "_local_executor", None)
    monkeypatch.setattr(placement._placements["celery"], "_shared", None)
    monkeypatch.setattr(evaluations, "_in_flight", {})
    yield
    for executor in (executors._local_executor, placement._placements["celery"]._shared):
        if executor is not None:
            executor.shutdown()


@pytest.fixture
def relu2_kernel() -> str:
    return RELU2_KERNEL


@pytest.fixture
def wrong_kernel() -> str:
    return WRONG_KERNEL


@pytest.fixture
def api_keys(teams):
    """{(team, "read"|"write"): raw key}, created by each team's admin."""
    from kernelhub.teams.services import api_key_create

    keys = {}
    for team_name in ("alpha", "beta"):
        for scope in ("read", "write"):
            issued = api_key_create(team=teams[team_name], name=f"{team_name}-{scope}",
                                    scope=scope,
                                    created_by=teams["users"][(team_name, "admin")])
            keys[(team_name, scope)] = issued.raw_key
    return keys


@pytest.fixture
def key_client():
    def make(raw_key: str) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw_key}")
        return client
    return make


@pytest.fixture
def user_client(teams):
    def make(team_name: str, role: str) -> APIClient:
        client = APIClient()
        client.force_login(teams["users"][(team_name, role)])
        return client
    return make


def _candidate(session, node_id, parent=None, **fields):
    from kernelhub.optimization.models import Candidate

    defaults = {"depth": 0 if parent is None else parent.depth + 1, "status": "correct",
                "source": "", "origin": {}}
    defaults.update(fields)
    return Candidate.objects.create(session=session, node_id=node_id, parent=parent, **defaults)


def populate_team(team, users, hardware, library_problem, kernel_source: str) -> dict:
    """One team's rows: a team problem, a session with a small tree, reviews, an evaluation."""
    from django.utils import timezone

    from kernelhub.api.models import Evaluation
    from kernelhub.optimization.models import Problem, SearchSession
    from kernelhub.review.services import kernel_approve, kernel_propose

    name = team.name
    problem = Problem.objects.create(
        team=team, name=f"{name}-problem", family="elementwise",
        source=library_problem.source, source_sha256=library_problem.source_sha256)
    session = SearchSession.objects.create(
        team=team, problem=library_problem, hardware=hardware["interpreter"],
        created_by=users[(name, "engineer")], status="finished", budget_evaluations=4)
    timing = {"candidate": {"median_ms": 0.5, "iqr_ms": 0.01, "samples": 3, "method": "interpreter"},
              "eager": {"median_ms": 1.0, "iqr_ms": 0.01, "samples": 3, "method": "interpreter"}}
    root = _candidate(session, "0", status="reference", origin={"synthesizer": "reference"},
                      source=library_problem.source)
    good = _candidate(session, "1", root, source=kernel_source, reward=2.0, speedup_vs_eager=2.0,
                      coverage=0.95, timing=timing,
                      diagnostics={"bottleneck": {"class": "memory-bound"}},
                      origin={"synthesizer": "offline", "transformation": "fuse",
                              "params": {"BLOCK": 1024}, "prompt": ""},
                      evaluated_at=timezone.now())
    lazy = _candidate(session, "2", root, source=kernel_source, status="rejected_lazy",
                      reward=0.0, coverage=0.1, origin={"synthesizer": "llm", "prompt": "p"})
    flagged = _candidate(session, "3", good, source=kernel_source, reward=1.5,
                         speedup_vs_eager=5.0, coverage=1.0,
                         integrity_flags=[{"check": "timing.roofline", "evidence": "too fast",
                                           "severity": "hack"}],
                         origin={"synthesizer": "offline", "transformation": "unroll"})
    approved = kernel_propose(candidate=good, user=users[(name, "engineer")])
    kernel_approve(review=approved, reviewer=users[(name, "reviewer")], comment="ships")
    pending = kernel_propose(candidate=flagged, user=users[(name, "engineer")])
    evaluation = Evaluation.objects.create(
        team=team, problem=library_problem, problem_name=library_problem.name,
        problem_source=library_problem.source, candidate_source=kernel_source,
        target="interpreter", state="done", status="correct", reward=1.5,
        result={"status": "correct", "reward": 1.5, "integrity_flags": []},
        finished_at=timezone.now())
    return {"problem": problem, "session": session, "candidates": [root, good, lazy, flagged],
            "approved": approved, "pending": pending, "evaluation": evaluation}


@pytest.fixture
def workspace(teams, hardware, library_problem):
    """Both teams populated: {"alpha": {...}, "beta": {...}} (see populate_team)."""
    return {name: populate_team(teams[name], teams["users"], hardware, library_problem,
                                RELU2_KERNEL)
            for name in ("alpha", "beta")}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
