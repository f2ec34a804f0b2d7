"""Approved kernels download as a module with a header, and as a ZIP whose check script
re-verifies the kernel (here on the CPU, through the Triton interpreter)."""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
import zipfile

import pytest

pytestmark = pytest.mark.django_db


def fetch_bundle(client, kernel_id) -> zipfile.ZipFile:
    response = client.get(f"/api/v1/kernels/{kernel_id}/bundle/", HTTP_ACCEPT="application/zip")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/zip"
    assert f"kernelhub-kernel-{kernel_id}.zip" in response["Content-Disposition"]
    return zipfile.ZipFile(io.BytesIO(response.content))


def run_check(tmp_path, archive, *args) -> subprocess.CompletedProcess:
    archive.extractall(tmp_path)
    folder = tmp_path / archive.namelist()[0].split("/")[0]
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([sys.executable, "check.py", "--json", "--trials", "3", *args],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=240)


def test_module_has_the_header_and_the_kernel(key_client, api_keys, workspace, relu2_kernel):
    kernel = workspace["alpha"]["approved"]
    response = key_client(api_keys[("alpha", "read")]).get(
        f"/api/v1/kernels/{kernel.pk}/module/", HTTP_ACCEPT="text/x-python")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/x-python")
    assert response["Content-Disposition"].endswith(f'_interpreter_kernel_{kernel.pk}.py"')
    source = response.content.decode()
    header = source.split("\n\n")[0]
    for expected in ("problem:   tiny-relu", "family: elementwise", "hardware:  Interpreter (CPU)",
                     "2.00x vs eager", "approved:  by alpha-reviewer", "ships",
                     "KernelHub 0.1.0", "kernel 0.5000 ms"):
        assert expected in header, expected
    assert relu2_kernel.strip() in source
    tree = ast.parse(source)  # a valid module
    namespace: dict = {}
    exec(compile(ast.Module([n for n in tree.body if isinstance(n, ast.Assign)], []), "m", "exec"),
         namespace)
    assert namespace["KERNELHUB_METADATA"]["approved_by"] == "alpha-reviewer"
    assert namespace["KERNELHUB_METADATA"]["speedup_vs_eager"] == 2.0


def test_bundle_check_script_verifies_and_times_the_kernel(key_client, api_keys, workspace,
                                                           tmp_path, tiny_problem_source):
    archive = fetch_bundle(key_client(api_keys[("alpha", "read")]), workspace["alpha"]["approved"].pk)
    names = {n.split("/", 1)[1] for n in archive.namelist()}
    assert names == {"kernel.py", "reference.py", "check.py", "metrics.json", "README.md"}
    folder = archive.namelist()[0].split("/")[0]
    assert archive.read(f"{folder}/reference.py").decode() == tiny_problem_source
    metrics = json.loads(archive.read(f"{folder}/metrics.json"))
    assert metrics["approved_by"] == "alpha-reviewer" and metrics["hardware"] == "interpreter"
    assert metrics["tolerance"]["class"] == "fp32" and metrics["speedup_vs_eager"] == 2.0
    done = run_check(tmp_path, archive)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["correct"] and report["interpreter"] and len(report["trials"]) == 3
    assert report["timing"]["method"] == "interpreter" and report["timing"]["candidate_ms"] > 0
    assert "trial 0: ok" in done.stdout


def test_bundle_check_script_catches_a_wrong_kernel(key_client, api_keys, workspace, tmp_path,
                                                    wrong_kernel):
    from kernelhub.optimization.models import Candidate

    kernel = workspace["alpha"]["approved"]
    Candidate.objects.filter(pk=kernel.candidate_id).update(source=wrong_kernel)
    done = run_check(tmp_path, fetch_bundle(key_client(api_keys[("alpha", "read")]), kernel.pk),
                     "--no-timing")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED" in done.stdout and json.loads(done.stdout.splitlines()[-1])["correct"] is False


def test_only_approved_kernels_are_exported(key_client, api_keys, workspace):
    client = key_client(api_keys[("alpha", "read")])
    pending = workspace["alpha"]["pending"].pk
    assert client.get(f"/api/v1/kernels/{pending}/module/").status_code == 404
    assert client.get(f"/api/v1/kernels/{pending}/bundle/").status_code == 404
