"""Issue 29 on the web: screened configurations are stored as `screened` candidates with
their screening, counted apart from evaluations, and the session page says both counts."""

from __future__ import annotations

import pytest
from django.urls import reverse

from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.optimization.runner import SessionRecorder, make_search_config
from search_engine.search.config import GPU_SCREEN
from search_engine.search.tree import SCREENED, Node

from .test_candidate_shape import recorded  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db


def _screened(node_id: int, **screen) -> Node:
    return Node(node_id, 1, 2, f"class ModelNew: ... # {node_id}\n",
                {"synthesizer": "offline", "transformation": "warps_up", "screened": True,
                 "screen": {"finalist": False, **screen}}, status=SCREENED)


def test_screened_candidates_are_stored_counted_and_shown(recorded, client):
    session = recorded["session"]  # a root and one evaluated child
    recorder = SessionRecorder(session)
    timed = _screened(2, passed=True, reason="passed the spot-check", median_ms=0.0123,
                      samples=40, method="cuda_events+l2_flush", rank=2)
    wrong = _screened(3, passed=False, reason="incorrect: trial 1: relative error 0.5")
    for node in (timed, wrong, timed):  # the last: a rebuilt loop re-announces its nodes
        recorder({"type": "node_created", "payload": node.to_dict()})

    session.refresh_from_db()
    assert session.screened_count == 2 and session.evaluated_count == 1
    rows = {c.node_id: c for c in Candidate.objects.filter(session=session)}
    assert rows["2"].status == "screened" and rows["2"].reward is None
    assert "0.0123 ms median of 40" in rows["2"].message and "rank 2" in rows["2"].message
    assert rows["3"].message == "screened out: incorrect: trial 1: relative error 0.5"
    assert session.best_candidate_id != rows["2"].pk

    assert client.login(username="alpha-viewer", password="pw-viewer")
    page = client.get(reverse("optimization:session_detail", args=[session.pk])).content.decode()
    assert '<span id="screened-n">2</span> / <span id="evaluated-n">1</span>' in page
    assert "screened (timed, not fully evaluated)" in page  # the tree's legend


def test_a_session_screens_on_a_gpu_and_not_on_the_interpreter(recorded, hardware):
    session = recorded["session"]
    assert make_search_config(session).screen == GPU_SCREEN  # an h200 session
    session.config = {"screen": 5, "screen_finalists": 2}
    assert (make_search_config(session).screen, make_search_config(session).screen_finalists) \
        == (5, 2)
    interpreter = SearchSession.objects.create(
        team=session.team, problem=session.problem, hardware=hardware["interpreter"])
    assert make_search_config(interpreter).screen == 0
