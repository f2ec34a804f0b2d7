"""Uploaded problems never run in the web process: validation and the offline coverage
analysis run in the sandbox (search_engine.problem_probe); coverage is computed once per
problem in the background and the pages only read what is stored."""

from __future__ import annotations

import builtins
import os
import secrets
import time
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from kernelhub.optimization import services, tasks
from kernelhub.optimization.models import Problem, SearchSession

REPO_ROOT = Path(__file__).resolve().parents[3]

HOSTILE = '''
import builtins, os, sys
import torch
import torch.nn as nn

TOKEN = {token!r}
builtins._kh_hostile_ran = TOKEN  # visible to the test if this ever ran in its process
stamp = "%d %d %s" % (os.getpid(), os.getppid(), " ".join(sys.argv))
for path in {targets!r}:
    try:
        with open(path, "w") as handle:
            handle.write(stamp)
    except OSError:
        pass
leaked = []
for path in {secrets!r}:
    try:
        with open(path, "rb") as handle:
            leaked.append(handle.read(40))
    except OSError:
        pass
if leaked:
    raise RuntimeError("LEAKED %r" % leaked)

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0

def get_inputs():
    return [torch.randn(8, 8)]

def get_init_inputs():
    return []
'''


@pytest.fixture
def started(monkeypatch):
    calls = []
    monkeypatch.setattr(services, "session_start", lambda session: calls.append(session.pk))
    return calls


def login(client, team, role):
    assert client.login(username=f"{team}-{role}", password=f"pw-{role}")


def form_data(hardware, **extra):
    data = {"strategy": "mcts", "synthesizer": "offline", "precision_policy": "strict",
            "hardware": hardware["interpreter"].pk, "budget_evaluations": 6,
            "budget_minutes": 5, "budget_cost_usd": 0, "seed": 0}
    data.update(extra)
    return data


def isolation_available() -> bool:
    from search_engine.evaluation.config import SandboxLimits
    from search_engine.evaluation.isolation import probe

    report = probe(SandboxLimits(), False)
    return "mount" not in report.get("layers_missing", ["mount"])


def hostile_problem(tmp_path: Path, read_secrets: bool = True) -> tuple[str, dict]:
    token = secrets.token_hex(6)
    markers = tmp_path / "markers"
    markers.mkdir()
    secret = tmp_path / "credentials.txt"
    secret.write_text("admin:hunter2\n")
    targets = {"tmp_dir": markers / "pid.txt", "repo_root": REPO_ROOT / f"kh-marker-{token}",
               "tmp": Path("/tmp") / f"kh-marker-{token}"}
    source = HOSTILE.format(token=token, targets=[str(p) for p in targets.values()],
                            secrets=[str(secret), str(REPO_ROOT / "kernelhub" / "settings.py"),
                                     str(REPO_ROOT / "manage.py")] if read_secrets else [])
    return source, {"markers": markers, "token": token, **targets}


@pytest.mark.django_db
def test_uploaded_code_never_runs_in_the_web_process(client, teams, hardware, started, tmp_path):
    source, where = hostile_problem(tmp_path, read_secrets=isolation_available())
    login(client, "alpha", "engineer")
    try:
        upload = SimpleUploadedFile("hostile.py", source.encode())
        response = client.post(reverse("optimization:session_new"),
                               form_data(hardware, team=teams["alpha"].pk, problem_file=upload))
        page = response.content.decode()
        # The page answers: stored and launched (the problem is valid); the session's loop
        # first checks the coverage (also in the sandbox): covered.
        assert response.status_code == 302, page[:3000]
        problem = Problem.objects.get(name="hostile")
        session = SearchSession.objects.get()
        assert session.problem == problem
        assert services.session_check_offline_coverage(session) is True
        problem.refresh_from_db()
        assert problem.offline_coverage_state == "covered"
        form = client.get(reverse("optimization:session_new") + f"?problem={problem.pk}")
        assert form.status_code == 200
        # Nothing of it ran here: not in this process, not as this process's child.
        assert getattr(builtins, "_kh_hostile_ran", None) != where["token"]
        assert not where["tmp_dir"].exists() and not list(where["markers"].iterdir())
        if isolation_available():  # its writes went to the sandbox's private /tmp or failed
            assert not where["repo_root"].exists() and not where["tmp"].exists()
    finally:
        for key in ("repo_root", "tmp"):
            if where[key].exists():
                stamp = where[key].read_text()
                where[key].unlink()
                assert str(os.getpid()) not in stamp.split()[:2], stamp


@pytest.mark.django_db
def test_secrets_are_not_readable_from_the_sandbox(teams, tmp_path):
    if not isolation_available():
        pytest.skip("no mount namespace on this host")
    source, _ = hostile_problem(tmp_path)
    problem = services.problem_create(name="reader", source=source, team=teams["alpha"],
                                      user=teams["users"][("alpha", "engineer")])
    assert problem.pk  # it would have failed validation with "LEAKED ..." otherwise


@pytest.mark.django_db
def test_an_endless_loop_at_import_gets_a_clear_error_in_time(client, teams, hardware, started):
    source = ("import torch\nwhile True:\n    pass\nclass Model: pass\n"
              "def get_inputs(): return [torch.ones(1)]\ndef get_init_inputs(): return []\n")
    began = time.monotonic()
    with pytest.raises(ValidationError, match="took over 4 s"):
        services.problem_create(name="spin", source=source, team=teams["alpha"],
                                user=teams["users"][("alpha", "engineer")], validate_timeout_s=4)
    assert time.monotonic() - began < 30 and not Problem.objects.exists()


def test_a_problem_that_allocates_too_much_gets_a_clear_error():
    from search_engine.problem_check import ProblemInvalid, check_problem

    source = ("import torch\nhog = b'x' * (3 << 30)\nclass Model: pass\n"
              "def get_inputs(): return [torch.ones(1)]\ndef get_init_inputs(): return []\n")
    began = time.monotonic()
    with pytest.raises(ProblemInvalid, match="memory") as info:
        check_problem(source, timeout_s=60, memory_bytes=1 << 30)
    assert "1 GiB" in str(info.value) and time.monotonic() - began < 60


# KernelBench's loss form at its official size: 8 GiB of inputs drawn from Pareto(0.01, 1.5)
OFFICIAL_SIZE_LOSS = (Path(__file__).resolve().parents[3] / "benchmarks" / "kernelbench_like" /
                      "official_forms" / "huber_pareto_inputs.py").read_text()


def test_official_sizes_are_validated_without_holding_their_memory():
    # KernelBench's loss at its official size holds 8 GiB of inputs, drawn from
    # torch.distributions: checked on meta tensors, it passes under a 1 GiB limit
    from search_engine.problem_check import check_problem

    info = check_problem(OFFICIAL_SIZE_LOSS, timeout_s=60, memory_bytes=1 << 30)
    assert info.input_shapes == [[32768, 32768], [32768, 32768]]
    assert info.input_dtypes == ["float32", "float32"] and info.parameter_count == 0


def test_inputs_that_need_real_values_are_validated_by_a_real_run():
    # a size read off a tensor's value has no meta form: the real run decides, and a
    # forward that fails on those inputs is still the problem's own error
    from search_engine.problem_check import ProblemInvalid, check_problem

    sized = ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
             "        return x * 2\n"
             "def get_inputs():\n    n = int(torch.randint(3, 4, ()).item())\n"
             "    return [torch.randn(n, 8)]\ndef get_init_inputs(): return []\n")
    assert check_problem(sized, timeout_s=60).input_shapes == [[3, 8]]
    broken = sized.replace("return x * 2", "return x @ x")
    with pytest.raises(ProblemInvalid, match="a reference must run on its own inputs"):
        check_problem(broken, timeout_s=60)


@pytest.mark.django_db
def test_a_forged_sandbox_answer_is_a_clear_error(client, teams, hardware, started):
    source = ("import os\nwith open('result.json', 'w') as f:\n    f.write('{\"probe\": 1, ')\n"
              "os._exit(0)\nclass Model: pass\ndef get_inputs(): pass\n"
              "def get_init_inputs(): pass\n")
    login(client, "alpha", "engineer")
    upload = SimpleUploadedFile("forger.py", source.encode())
    response = client.post(reverse("optimization:session_new"),
                           form_data(hardware, team=teams["alpha"].pk, problem_file=upload))
    page = response.content.decode()
    assert response.status_code == 400 and 'id="upload-error"' in page
    assert "answer is not valid JSON" in page and not Problem.objects.exists()


FORGED_ANALYSIS = '''
import json, os, sys
import torch
import torch.nn as nn

if "analyze" in sys.argv:  # validation passes; the coverage analysis is lied to
    graph = {"nodes": [{"id": 0, "op": "input", "operands": [], "attrs": {"index": 0},
                        "shape": [8], "dtype": "float32"},
                       {"id": 1, "op": "relu", "operands": [0], "attrs": {},
                        "shape": [8], "dtype": "float32"}],
             "output": 1, "input_count": 1, "op_names": ["relu"], "input_names": ["x"],
             "output_dtype": "torch.float32); import os; os.system('id'"}
    with open("result.json", "w") as f:
        f.write(json.dumps({"probe": 1, "task": "analyze", "ok": True, "covered": True,
                            "analysis": graph}))
    os._exit(0)

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(8)]

def get_init_inputs():
    return []
'''


@pytest.mark.django_db
def test_a_forged_analysis_makes_coverage_unknown(teams):
    problem = services.problem_create(name="forged", source=FORGED_ANALYSIS, team=teams["alpha"],
                                      user=teams["users"][("alpha", "engineer")],
                                      request_offline_coverage=False)
    tasks.problem_coverage_task(problem.pk)
    problem.refresh_from_db()
    assert problem.offline_coverage_state == "unknown"
    assert "malformed" in problem.offline_coverage_detail and "output_dtype" in \
        problem.offline_coverage_detail


# --- coverage: once per problem, in the background, never inline --------------------------------

@pytest.mark.django_db
def test_coverage_of_a_library_problem_becomes_covered_after_the_task(
        client, teams, library_problem, django_capture_on_commit_callbacks):
    assert library_problem.offline_coverage == {
        "state": "pending", "detail": library_problem.offline_coverage["detail"],
        "family": "", "ops": []}
    login(client, "alpha", "viewer")
    url = reverse("optimization:problem_coverage") + f"?problem={library_problem.pk}"
    with django_capture_on_commit_callbacks() as queued:
        assert 'data-state="pending"' in client.get(url).content.decode()
        assert 'data-state="pending"' in client.get(url).content.decode()  # asked once
    assert len(queued) == 1
    assert tasks.problem_coverage_task(library_problem.pk) == "covered"
    library_problem.refresh_from_db()
    assert library_problem.offline_coverage_family == "elementwise"
    assert library_problem.offline_coverage_sha256 == library_problem.source_sha256
    assert library_problem.offline_coverage_computed_at is not None
    page = client.get(url).content.decode()
    assert 'data-state="covered"' in page and "hx-trigger" not in page


@pytest.mark.django_db
def test_pages_never_run_the_analysis(client, teams, library_problem, monkeypatch,
                                      django_capture_on_commit_callbacks):
    import search_engine.problem_probe as probe
    from search_engine.synthesis.offline import OfflineSynthesizer

    def boom(*args, **kwargs):
        raise AssertionError("the web process ran the analysis inline")

    monkeypatch.setattr(OfflineSynthesizer, "check_covered", boom)
    monkeypatch.setattr(probe, "run_probe", boom)
    login(client, "alpha", "engineer")
    with django_capture_on_commit_callbacks() as queued:
        form = client.get(reverse("optimization:session_new") + f"?problem={library_problem.pk}")
        partial = client.get(reverse("optimization:problem_coverage")
                             + f"?problem={library_problem.pk}")
    assert form.status_code == 200 and partial.status_code == 200
    assert 'data-state="pending"' in partial.content.decode() and len(queued) == 1


@pytest.mark.django_db
def test_uploads_ask_for_coverage_and_celery_gets_it_on_the_search_queue(
        teams, tiny_problem_source, settings, monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(tasks.problem_coverage_task, "apply_async",
                        lambda args, queue: sent.append((args, queue)))
    settings.KERNELHUB_EXECUTOR = "celery"
    with django_capture_on_commit_callbacks(execute=True):
        problem = services.problem_create(name="relu", source=tiny_problem_source,
                                          team=teams["alpha"],
                                          user=teams["users"][("alpha", "engineer")])
    assert sent == [([problem.pk], "search")]
    problem.refresh_from_db()
    assert problem.offline_coverage_state == "pending" and problem.offline_coverage_requested_at


@pytest.mark.django_db(transaction=True)
def test_embedded_mode_computes_coverage_in_a_background_thread(teams, tiny_problem_source):
    problem = services.problem_create(name="relu", source=tiny_problem_source,
                                      team=teams["alpha"],
                                      user=teams["users"][("alpha", "engineer")])
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        problem.refresh_from_db()
        if problem.offline_coverage_ready:
            break
        time.sleep(0.5)
    assert problem.offline_coverage_state == "covered", problem.offline_coverage_detail

