"""`python -m search_engine optimize` and `suite`: the public command-line contract."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import LIBRARY

ROOT = Path(__file__).resolve().parents[3]
# outside every offline family: a selection (median) needs a sort-like family
UNCOVERED = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
             "class Model(nn.Module):\n    def forward(self, x):\n"
             "        return torch.median(torch.relu(x), dim=1).values\n\n"
             "def get_inputs():\n    return [torch.randn(2, 3, 4, 4)]\n\n"
             "def get_init_inputs():\n    return []\n")


def cli(*args, timeout=600):
    env = dict(os.environ, TRITON_INTERPRET="1")
    return subprocess.run([sys.executable, "-m", "search_engine", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_optimize_json_contract(tmp_path):
    tree_file = tmp_path / "tree.json"
    proc = cli("optimize", "--problem", str(LIBRARY / "softmax.py"), "--target", "interpreter",
               "--strategy", "evolution", "--budget", "3", "--seed", "1", "--no-ncu",
               "--out", str(tree_file), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["evaluated"] == 3
    best = report["best"]
    assert best["status"] == "correct" and "@triton.jit" in best["source"]
    assert {"speedup_vs_eager", "speedup_vs_compile", "node_id"} <= set(best)
    ids = {n["id"] for n in report["nodes"]}
    assert best["node_id"] in ids and len(report["nodes"]) == 4
    assert all({"id", "parent", "status", "reward", "advantage"} <= set(n)
               for n in report["nodes"])
    assert "evaluations" in proc.stderr and "best" in proc.stderr  # the progress bar
    stored = json.loads(tree_file.read_text())
    assert [n["id"] for n in stored] == sorted(ids) and stored[1]["origin"]["params"]


def test_optimize_refuses_an_uncovered_problem_with_the_ops(tmp_path):
    (tmp_path / "median.py").write_text(UNCOVERED)
    proc = cli("optimize", "--problem", str(tmp_path / "median.py"), "--target",
               "interpreter", "--json")
    assert proc.returncode == 3
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["status"] == "not_covered" and report["ops"] == ["median"]
    assert report["evaluated"] == 0 and report["best"] is None
    assert "median" in proc.stderr


@pytest.mark.parametrize("args,message", [
    (["--problem", "no/such/problem.py"], "cannot read problem file"),
    (["--problem", str(LIBRARY / "softmax.py"), "--size", "dim"], "NAME=VALUE"),
    (["--problem", str(LIBRARY / "softmax.py"), "--budget", "0"], "at least 1"),
    (["--problem", str(LIBRARY / "softmax.py"), "--target", "tpu"], "unknown hardware"),
])
def test_bad_input_is_a_clear_error(args, message):
    proc = cli("optimize", *args, "--json")
    assert proc.returncode == 2, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["status"] == "error" and message in report["message"]


@pytest.mark.slow
def test_suite_writes_a_report(tmp_path):
    problems = tmp_path / "problems"
    problems.mkdir()
    shutil.copy(LIBRARY / "softmax.py", problems / "softmax.py")
    (problems / "median.py").write_text(UNCOVERED)
    (problems / "broken.py").write_text("import torch\n")
    report_path = tmp_path / "report.json"
    proc = cli("suite", str(problems), "--target", "interpreter", "--budget", "2",
               "--no-ncu", "--report", str(report_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(report_path.read_text())
    rows = {r["problem"]: r for r in report["problems"]}
    assert rows["softmax"]["status"] == "solved" and rows["softmax"]["evaluated"] == 2
    assert rows["median"]["status"] == "not_covered"
    assert rows["median"]["ops"] == ["median"]
    assert rows["broken"]["status"] == "invalid" and "missing" in rows["broken"]["reason"]
    assert report["summary"] == {**report["summary"], "problems": 3, "solved": 1,
                                 "not_covered": 1, "invalid": 1}
    assert "report written" in proc.stdout
