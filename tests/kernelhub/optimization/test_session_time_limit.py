"""A web session's time budget is a hard limit: evaluations in flight are killed, the best
so far is stored and proposed, and the session says the limit ended it (the real runner,
LocalExecutor and sandboxes on the interpreter; kernels whose evaluation takes 20+ s)."""

import hashlib
import time
from concurrent.futures import wait

import pytest

from kernelhub.optimization import runner
from kernelhub.optimization.executors import SharedExecutorHandle
from kernelhub.optimization.models import Candidate, Problem, SearchSession
from kernelhub.optimization.services import session_create
from tests.search_engine.search import slow_search

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture(scope="module")
def warm_executor():
    yield from slow_search.warm_executor()


def test_the_time_budget_stops_the_session_and_keeps_its_best(teams, hardware, monkeypatch,
                                                              warm_executor):
    executor, quick_s = warm_executor
    recording = slow_search.Recording(executor)
    monkeypatch.setattr("kernelhub.placement.evaluation_executor",
                        lambda session_id=None: SharedExecutorHandle(recording))
    monkeypatch.setattr(runner, "make_synthesizer", lambda session: slow_search.SlowAfterFirst())
    source = slow_search.PROBLEM.read_text()
    sha = hashlib.sha256(source.encode()).hexdigest()
    # Its coverage known: the loop's first step (checking it) is not what is timed here.
    problem = Problem.objects.create(name="softmax", family="rows", source=source,
                                     source_sha256=sha, offline_coverage_state="covered",
                                     offline_coverage_sha256=sha)
    limit = slow_search.limit_after_quick(quick_s)
    session = session_create(
        user=teams["users"][("alpha", "engineer")], team=teams["alpha"], problem=problem,
        hardware=hardware["interpreter"], budget_evaluations=40, budget_minutes=limit / 60,
        config={"children_per_step": 2, "max_in_flight": 2})
    started = time.monotonic()
    runner.run_session(session.pk)
    elapsed = time.monotonic() - started
    _, running = wait(recording.futures, timeout=5)
    assert not running, "a cancelled evaluation's sandbox was not killed"
    assert elapsed < limit + 8, f"the session ran {elapsed:.1f} s under a {limit} s budget"
    session.refresh_from_db()
    assert session.status == SearchSession.Status.FINISHED
    assert "time limit" in session.status_message
    best = session.best_candidate
    assert best is not None and best.node_id == "1" and best.status == "correct"
    in_flight = Candidate.objects.filter(session=session).exclude(node_id__in=["0", "1"])
    assert in_flight.exists() and {c.status for c in in_flight} == {"cancelled"}
