"""Why a session is not moving: one read (`session_state`) behind the session page, the
dashboard and the REST API; the embedded default waits for a target it cannot run instead of
failing every candidate; no revoke without a task id."""

from __future__ import annotations

from concurrent.futures import Future
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from kernelhub import placement
from kernelhub.optimization import executors, ledger
from kernelhub.optimization.models import Candidate, EvaluationJob, SearchSession, WorkerPresence
from kernelhub.optimization.services import (
    session_cancel, session_create, session_llm_outage, session_set_status, session_start,
)
from kernelhub.optimization.session_state import session_state
from search_engine.evaluation.executor import LocalExecutor
from search_engine.protocols import EvaluationRequest

# one xdist worker for every test that reads the live workers on the shared Redis
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("shared-redis")]


def make_session(teams, hardware, problem, target: str = "h200") -> SearchSession:
    return session_create(user=teams["users"][("alpha", "engineer")], team=teams["alpha"],
                          problem=problem, hardware=hardware[target], budget_evaluations=2,
                          seed=1)


def present(name: str, queues: str) -> None:
    now = timezone.now()
    WorkerPresence.objects.update_or_create(name=name, defaults={
        "queues": queues, "started_at": now, "beat_at": now})


def api_state(teams, session) -> dict:
    client = APIClient()
    client.force_authenticate(teams["users"][("alpha", "viewer")])
    found = client.get(f"/api/v1/sessions/{session.pk}/")
    assert found.status_code == 200, found.content
    return found.json()


def page(client, teams, name: str, *args) -> str:
    client.force_login(teams["users"][("alpha", "engineer")])
    response = client.get(reverse(name, args=args))
    assert response.status_code == 200
    return response.content.decode()


# -- distributed mode: each state, the same on the page, the dashboard and the API ---------

def test_each_distributed_state_reaches_the_api_the_page_and_the_dashboard(
        teams, hardware, library_problem, settings, client):
    settings.KERNELHUB_EXECUTOR = "celery"
    session = make_session(teams, hardware, library_problem)

    state = api_state(teams, session)  # no search worker at all
    assert (state["state"], state["waiting_on_queue"]) == ("waiting_for_worker", "search")
    assert state["status"] == "queued"  # the shipped fields stay as they were

    present("search@a", "ingest,search")
    ledger.lease_reserve(session.pk)  # launched: its message waits for a loop slot
    busy = make_session(teams, hardware, library_problem)
    ledger.lease_acquire(busy.pk, "search@a:1:x")
    state = api_state(teams, session)
    assert (state["state"], state["waiting_on_queue"]) == ("queued_for_loop", "search")
    assert "1 session loop holds" in state["state_detail"], state["state_detail"]
    assert state["state_label"] == "queued for a loop slot"
    html = page(client, teams, "optimization:session_detail", session.pk)
    assert 'id="queued-for-loop"' in html and "queued for a loop slot" in html
    dashboard = page(client, teams, "dashboard")
    assert f'data-session="{session.pk}" data-state="queued_for_loop"' in dashboard

    ledger.lease_acquire(session.pk, "search@a:1:y")  # its loop took a slot
    state = api_state(teams, session)
    assert (state["state"], state["waiting_on_queue"]) == ("waiting_for_worker", "gpu.h200")
    assert "no live worker serves gpu.h200" in state["state_detail"]
    assert 'id="waiting-for-worker"' in page(client, teams, "optimization:session_detail",
                                             session.pk)

    present("gpu0@b", "gpu.h200")
    assert api_state(teams, session)["state"] == "checking_problem"  # the loop's first step
    type(library_problem).objects.filter(pk=library_problem.pk).update(
        offline_coverage_state="covered", offline_coverage_sha256=library_problem.source_sha256)
    assert api_state(teams, session)["state"] == "running"
    WorkerPresence.objects.filter(name="gpu0@b").update(
        beat_at=timezone.now() - timedelta(minutes=1))  # it stopped beating
    assert api_state(teams, session)["state"] == "waiting_for_worker"

    session_llm_outage(session, {"status_code": 503, "error": "overloaded", "retry_in_s": 30},
                       "endpoint down")
    session.refresh_from_db()
    state = api_state(teams, session)
    assert state["state"] == "paused_llm_outage" and "HTTP 503" in state["state_detail"]

    session_set_status(session, SearchSession.Status.FINISHED, "budget reached")
    state = api_state(teams, session)
    assert (state["state"], state["state_detail"], state["waiting_on_queue"]) == (
        "finished", "budget reached", "")


def test_the_schema_documents_the_state_fields(teams):
    client = APIClient()
    client.force_authenticate(teams["users"][("alpha", "viewer")])
    schema = client.get("/api/schema/?format=json").json()
    fields = schema["components"]["schemas"]["Session"]["properties"]
    assert {"status", "status_message", "state", "state_label", "state_detail",
            "waiting_on_queue"} <= set(fields)
    assert "queued_for_loop" in str(schema["components"]["schemas"])


# -- embedded default: a target this server cannot run waits, never fails the kernels -------

def test_the_form_marks_the_targets_this_server_cannot_run(teams, settings, client, hardware):
    settings.KERNELHUB_LOCAL_TARGETS = "interpreter"
    html = page(client, teams, "optimization:session_new")
    assert "H200 — no worker now (a session waits for one)" in html
    assert "interpreter — no worker" not in html.lower()


def test_a_session_on_a_gpu_this_server_lacks_waits_and_evaluates_nothing(
        teams, hardware, library_problem, settings, client):
    settings.KERNELHUB_EXECUTOR = "local"
    settings.KERNELHUB_LOCAL_TARGETS = "interpreter"
    session = make_session(teams, hardware, library_problem)
    session_start(session)
    deadline = timezone.now() + timedelta(seconds=60)
    while "waiting for a worker" not in session.status_message and timezone.now() < deadline:
        session.refresh_from_db()
    assert "this server cannot run H200" in session.status_message, session.status_message
    assert session.is_active and placement.session_loop_alive(session.pk)
    state = api_state(teams, session)
    assert (state["state"], state["waiting_on_queue"]) == ("waiting_for_worker", "gpu.h200")
    assert "this server cannot run" in page(client, teams, "optimization:session_detail",
                                            session.pk)
    assert not Candidate.objects.filter(session=session).exists()  # no kernel was blamed

    session_cancel(session, teams["users"][("alpha", "engineer")])
    assert placement.session_wait(session.pk, 30)
    session.refresh_from_db()
    assert session.status == "cancelled" and session.evaluated_count == 0


def test_an_evaluation_on_a_host_without_its_gpu_is_an_infrastructure_failure(
        tiny_problem_source):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    executor = LocalExecutor(max_workers=1, warm_sandboxes=False)
    try:
        result = executor.submit(EvaluationRequest(
            problem_source=tiny_problem_source, candidate_source="class ModelNew: pass\n",
            target="h200")).result(120)
    finally:
        executor.shutdown()
    assert result.message.startswith("not evaluated (infrastructure)"), result.message
    assert "needs a CUDA GPU" in result.diagnostics["infrastructure_failure"]


# -- no revoke without a task id -----------------------------------------------------------

def test_cancelling_a_job_already_cancelled_through_its_record_revokes_nothing(
        teams, hardware, library_problem, settings, monkeypatch):
    settings.KERNELHUB_EXECUTOR = "celery"
    revoked = []
    monkeypatch.setattr(executors.app.control, "revoke", lambda ids: revoked.append(ids))
    monkeypatch.setattr(executors, "broker_epoch", lambda: "epoch")
    session = make_session(teams, hardware, library_problem)
    job = ledger.job_open(key="k1", queue="gpu.h200", request={"target": "h200"},
                          session_id=session.pk)
    ledger.job_new_delivery(job)
    executor = executors.CeleryExecutor(session.pk)
    future: Future = Future()
    executor._futures[job.pk] = future
    assert ledger.session_jobs_cancel(session.pk) == [job.task_id]  # through the record
    future.cancel()  # the loop cancels its future too
    executor.check()
    executors.revoke(["", ""])
    assert revoked == [] and not executor._futures
    assert EvaluationJob.objects.get(pk=job.pk).state == "cancelled"


def test_a_gpu_worker_refuses_the_targets_its_host_cannot_run(monkeypatch):
    from kernelhub.optimization import worker

    monkeypatch.setattr(worker.shutil, "which", lambda name: None)  # no nvidia-smi
    monkeypatch.setattr(worker.os.path, "exists", lambda path: False)  # no ROCm either
    monkeypatch.delenv("KERNELHUB_GPU_NAME", raising=False)
    assert worker.queues_this_host_cannot_serve(["gpu.interpreter", "search"]) == {}
    assert "no GPU for target h200" in worker.queues_this_host_cannot_serve(
        ["gpu.h200"])["gpu.h200"]
    monkeypatch.setenv("KERNELHUB_GPU_NAME", "NVIDIA H100 80GB HBM3")
    assert "not h200" in worker.queues_this_host_cannot_serve(["gpu.h200"])["gpu.h200"]
    assert worker.queues_this_host_cannot_serve(["gpu.h100"]) == {}
    monkeypatch.setenv("KERNELHUB_GPU_NAME", "Some Future GPU")  # unknown: trusted
    assert worker.queues_this_host_cannot_serve(["gpu.h200"]) == {}
    with pytest.raises(SystemExit, match="gpu.h200"):
        monkeypatch.setenv("KERNELHUB_GPU_NAME", "NVIDIA A100-SXM4-80GB")
        worker.refuse_targets_this_host_cannot_run(options={"queues": ["gpu.h200"]})


@pytest.mark.gpu
def test_on_a_gpu_host_its_target_is_served_here_and_by_its_worker(settings):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelhub.optimization import worker
    from search_engine.hardware import detect_local_target

    settings.KERNELHUB_LOCAL_TARGETS = ""
    target = detect_local_target().name
    assert target != "interpreter" and placement.local_target_served(target)
    assert worker.queues_this_host_cannot_serve([f"gpu.{target}"]) == {}
