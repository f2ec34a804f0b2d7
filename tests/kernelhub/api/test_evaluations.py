"""Reward service: POST /api/v1/evaluations (single and batch), evaluated for real by the
evaluation framework (LocalExecutor in-process, or Celery GPU workers), rate-limited."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelhub.api import evaluations as service
from kernelhub.api.models import Evaluation
from kernelhub.optimization.models import EvaluationJob

# one xdist worker for the tests on the shared Redis (the gpu worker's database 7)
pytestmark = pytest.mark.xdist_group("shared-redis")
REPO = Path(__file__).resolve().parents[3]
CLI_KEYS = set(__import__("search_engine.evaluation.result", fromlist=["EvaluationResult"])
               .EvaluationResult.__dataclass_fields__)


def wait_done(client, pk, timeout=240) -> dict:
    service.wait_for(pk, timeout=timeout)
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/api/v1/evaluations/{pk}").json()
        if body["state"] not in ("queued", "running") or time.monotonic() > deadline:
            return body
        time.sleep(0.5)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_single_and_batch_submissions_return_the_cli_result(
        key_client, api_keys, workspace, library_problem, relu2_kernel, wrong_kernel, tmp_path):
    client = key_client(api_keys[("alpha", "write")])
    response = client.post("/api/v1/evaluations", {
        "problem": library_problem.pk, "candidate_source": relu2_kernel, "target": "interpreter",
        "timeout_s": 120}, format="json")
    assert response.status_code == 202, response.content
    single = response.json()
    assert single["state"] in ("queued", "running", "done") and single["problem_name"] == "tiny-relu"
    response = client.post("/api/v1/evaluations", {"evaluations": [
        {"problem_source": library_problem.source, "candidate_source": wrong_kernel,
         "target": "auto"},
        {"problem_source": library_problem.source, "candidate_source": "def broken(:\n"},
    ]}, format="json")
    assert response.status_code == 202, response.content
    batch = response.json()
    assert len(batch["evaluations"]) == 2
    assert {e["batch_id"] for e in batch["evaluations"]} == {batch["batch_id"]}

    good = wait_done(client, single["id"])
    assert good["state"] == "done", good["result"]
    assert set(good["result"]) == CLI_KEYS  # exactly the CLI's --json object
    assert good["result"]["status"] == "correct" and good["status"] == "correct"
    assert good["reward"] == good["result"]["reward"] > 0
    assert good["result"]["target"] == "interpreter" and good["result"]["integrity_flags"] == []

    wrong, broken = (wait_done(client, e["id"]) for e in batch["evaluations"])
    assert wrong["state"] == "done" and wrong["result"]["status"] == "incorrect"
    assert wrong["reward"] == 0.0
    assert broken["state"] == "done" and broken["result"]["status"] == "compile_error"
    assert broken["result"]["message"] and broken["reward"] == 0.0

    # The same result object the CLI prints for the same problem and candidate.
    (tmp_path / "p.py").write_text(library_problem.source)
    (tmp_path / "c.py").write_text(relu2_kernel)
    cli = subprocess.run([sys.executable, "-m", "search_engine", "evaluate", "--problem",
                          str(tmp_path / "p.py"), "--candidate", str(tmp_path / "c.py"),
                          "--target", "interpreter", "--json"], cwd=REPO, capture_output=True,
                         text=True, timeout=240, env={**os.environ, "TRITON_INTERPRET": "1"})
    printed = json.loads(cli.stdout.strip().splitlines()[-1])
    assert set(printed) == set(good["result"])
    for key in ("status", "reward", "coverage", "integrity_flags", "precision_policy", "target",
                "speedup_label"):
        assert printed[key] == good["result"][key], key

    # listed for the team (filter by batch), never for the other team
    listed = client.get(f"/api/v1/evaluations/?batch_id={batch['batch_id']}").json()["results"]
    assert {e["id"] for e in listed} == {e["id"] for e in batch["evaluations"]}
    beta = key_client(api_keys[("beta", "read")])
    assert beta.get(f"/api/v1/evaluations/{single['id']}").status_code == 404
    odata = client.get("/odata/evaluations?$filter=status eq 'correct' and reward gt 0").json()
    assert single["id"] in {row["id"] for row in odata["value"]}


@pytest.mark.django_db
@pytest.mark.parametrize("body, fragment", [
    ({"candidate_source": "x"}, "exactly one of"),
    ({"problem": 1, "problem_source": "x", "candidate_source": "x"}, "exactly one of"),
    ({"problem_source": "x"}, "candidate_source"),
    ({"problem": "LIB", "candidate_source": "x", "target": "tpu"}, "unknown hardware"),
    ({"problem": "LIB", "candidate_source": "x", "target": "h200"}, "needs a GPU"),
    ({"problem": "LIB", "candidate_source": "x", "precision_policy": "yolo"}, "yolo"),
    ({"problem": 999999, "candidate_source": "x"}, "No problem"),
    ({"problem_source": "this is not a problem", "candidate_source": "x"}, "does not parse"),
    ({"problem_source": "x = 1", "candidate_source": "x"}, "not a KernelBench problem"),
    ({"evaluations": []}, "evaluations"),
    ({"evaluations": [{"problem_source": "x", "candidate_source": "x"}] * 65}, "evaluations"),
    ({"evaluations": [{"problem_source": "x", "candidate_source": "x"}], "target": "h200"},
     "only 'evaluations'"),
])
def test_bad_submissions_get_400_and_store_nothing(key_client, api_keys, workspace, body,
                                                   fragment, library_problem):
    if body.get("problem") == "LIB":
        body = {**body, "problem": library_problem.pk}
    before = Evaluation.objects.count()
    response = key_client(api_keys[("alpha", "write")]).post("/api/v1/evaluations", body,
                                                              format="json")
    assert response.status_code == 400
    assert fragment in json.dumps(response.json()), response.json()
    assert Evaluation.objects.count() == before


@pytest.mark.django_db
def test_submissions_are_rate_limited_per_key(key_client, api_keys, workspace, settings):
    settings.KERNELHUB_API_THROTTLE_RATES = {"evaluations": "3/min"}
    alpha = key_client(api_keys[("alpha", "write")])
    codes = [alpha.post("/api/v1/evaluations", {}, format="json").status_code for _ in range(4)]
    assert codes == [400, 400, 400, 429]
    assert "Retry-After" in alpha.post("/api/v1/evaluations", {}, format="json")
    # another key has its own budget, and reads are a different scope
    beta = key_client(api_keys[("beta", "write")])
    assert beta.post("/api/v1/evaluations", {}, format="json").status_code == 400
    assert alpha.get("/api/v1/evaluations/").status_code == 200


@pytest.mark.django_db
def test_pending_evaluations_are_capped_per_key(key_client, api_keys, workspace, settings,
                                                library_problem):
    from kernelhub.teams.services import api_key_authenticate

    settings.KERNELHUB_API_MAX_PENDING_EVALUATIONS = 1
    key = api_key_authenticate(api_keys[("alpha", "write")])
    Evaluation.objects.create(team=key.team, api_key=key, problem_source="x",
                              candidate_source="x", target="interpreter", state="running")
    response = key_client(api_keys[("alpha", "write")]).post("/api/v1/evaluations", {
        "problem": library_problem.pk, "candidate_source": "x", "target": "interpreter"},
        format="json")
    assert response.status_code == 429 and "pending" in response.json()["detail"]


@pytest.mark.django_db
def test_evaluations_lost_to_a_restart_are_reported(key_client, api_keys, workspace):
    from django.utils import timezone

    row = workspace["alpha"]["evaluation"]
    Evaluation.objects.filter(pk=row.pk).update(
        state="queued", result=None, submitted_at=timezone.now() - timezone.timedelta(hours=1))
    body = key_client(api_keys[("alpha", "read")]).get(f"/api/v1/evaluations/{row.pk}").json()
    assert body["state"] == "error" and "restarted" in body["result"]["message"]


@pytest.mark.django_db
def test_distributed_mode_queues_on_the_targets_gpu_queue(key_client, api_keys, workspace,
                                                          settings, library_problem, monkeypatch,
                                                          django_capture_on_commit_callbacks):
    """In distributed mode the request goes to the lead's Celery task on `gpu.<target>`."""
    from kernelhub.optimization import tasks

    settings.KERNELHUB_EXECUTOR = "celery"
    sent = []

    monkeypatch.setattr(tasks.evaluate_candidate_task, "apply_async",
                        lambda args, queue, **options: sent.append((args, queue)))
    with django_capture_on_commit_callbacks(execute=True):
        response = key_client(api_keys[("alpha", "write")]).post("/api/v1/evaluations", {
            "problem": library_problem.pk, "candidate_source": "x", "target": "h200"},
            format="json")
    assert response.status_code == 202, response.content
    assert [queue for _, queue in sent] == ["gpu.h200"]
    job = EvaluationJob.objects.get(key=f"api:{response.json()['id']}")
    assert sent[0][0] == [job.pk] and job.queue == "gpu.h200"
    assert job.request["target"] == "h200" and job.request["candidate_source"] == "x"


@pytest.mark.django_db
def test_a_submission_that_cannot_be_queued_reports_why(key_client, api_keys, workspace, settings,
                                                        library_problem, monkeypatch,
                                                        django_capture_on_commit_callbacks):
    from kernelhub.optimization import tasks

    settings.KERNELHUB_EXECUTOR = "celery"

    def broker_down(args, queue, **options):
        raise ConnectionError("Error 111 connecting to redis:6379. Connection refused.")

    monkeypatch.setattr(tasks.evaluate_candidate_task, "apply_async", broker_down)
    client = key_client(api_keys[("alpha", "write")])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/evaluations", {
            "problem": library_problem.pk, "candidate_source": "x", "target": "h200"},
            format="json")
    assert response.status_code == 202
    body = client.get(f"/api/v1/evaluations/{response.json()['id']}").json()
    assert body["state"] == "error" and "Connection refused" in body["result"]["message"]


@pytest.fixture
def gpu_worker(redis_url, tmp_path):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("distributed reward-service test runs on PostgreSQL (DATABASE_URL)")
    url = redis_url.rsplit("/", 1)[0] + "/7"  # a database of our own on the shared Redis
    db = connection.settings_dict  # the worker reads the evaluation ledger of the test database
    database_url = (f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
                    f"{db['PORT'] or 5432}/{db['NAME']}")
    env = {**os.environ, "REDIS_URL": url, "DATABASE_URL": database_url,
           "KERNELHUB_DATA_DIR": str(tmp_path),
           "TRITON_INTERPRET": "1", "PYTHONUNBUFFERED": "1"}
    celery = str(Path(sys.executable).with_name("celery"))
    log = tmp_path / "gpu.log"
    proc = subprocess.Popen(
        [celery, "-A", "kernelhub", "worker", "-Q", "gpu.interpreter", "-c", "1",
         "-n", "api-gpu-test@%h", "-l", "info", "--without-gossip", "--without-mingle"],
        cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    yield url, log
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
def test_celery_gpu_worker_evaluates_submissions(key_client, api_keys, workspace, settings,
                                                 library_problem, relu2_kernel, gpu_worker,
                                                 celery_on_redis):
    url, log = gpu_worker
    settings.KERNELHUB_EXECUTOR = "celery"
    celery_on_redis(url)
    client = key_client(api_keys[("alpha", "write")])
    response = client.post("/api/v1/evaluations", {
        "problem": library_problem.pk, "candidate_source": relu2_kernel,
        "target": "interpreter"}, format="json")
    assert response.status_code == 202, response.content
    pk = response.json()["id"]
    deadline = time.monotonic() + 240
    body = client.get(f"/api/v1/evaluations/{pk}").json()
    while body["state"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(1)
        body = client.get(f"/api/v1/evaluations/{pk}").json()
    assert body["state"] == "done", (body, log.read_text()[-2000:])
    assert body["result"]["status"] == "correct" and set(body["result"]) == CLI_KEYS
