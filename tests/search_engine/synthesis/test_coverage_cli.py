"""`python -m search_engine coverage DIR [--json]`: one row per problem file (covered, the
family, the ops that stop it), the totals, the JSON contract on the last line; problem code
runs only in the sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

COVERED = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.pool = nn.MaxPool2d(3, stride=2)  # overlapping windows: a kernel of its own

    def forward(self, x):
        return self.pool(torch.relu(self.conv(x)))

def get_inputs():
    return [torch.randn(2, 3, 9, 9)]

def get_init_inputs():
    return []
'''

UNCOVERED = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.fft.fft(x).real

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return []
'''

# runs code at import: if the CLI ran it outside the sandbox, the marker would appear (the
# sandbox's environment does not carry KH_COVERAGE_MARKER)
SNOOP = '''import os
import torch
import torch.nn as nn

_marker = os.environ.get("KH_COVERAGE_MARKER")
if _marker:
    open(_marker, "w").write("ran outside the sandbox")

class Model(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return []
'''


def run_coverage(folder: Path, *extra: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "search_engine", "coverage", str(folder),
                           *extra], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def test_coverage_reports_every_problem_with_the_json_contract(tmp_path):
    (tmp_path / "nested").mkdir()
    (tmp_path / "a_conv_pool.py").write_text(COVERED)
    (tmp_path / "b_fft.py").write_text(UNCOVERED)
    (tmp_path / "nested" / "c_scan.py").write_text(SNOOP)
    (tmp_path / "helpers.py").write_text("X = 1\n")  # no Model: not a problem
    marker = tmp_path / "marker.txt"
    done = run_coverage(tmp_path, "--json", env={"KH_COVERAGE_MARKER": str(marker)})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(report) >= {"problems", "covered", "total"}
    assert report["total"] == 3 and report["covered"] == 2
    rows = {p["file"]: p for p in report["problems"]}
    assert set(rows) == {"a_conv_pool.py", "b_fft.py", "nested/c_scan.py"}
    for row in rows.values():
        assert set(row) >= {"file", "covered", "family", "ops"}
    assert rows["a_conv_pool.py"]["covered"] is True
    assert rows["a_conv_pool.py"]["family"] == "conv"
    assert rows["nested/c_scan.py"]["family"] == "scan"
    assert rows["b_fft.py"]["covered"] is False and rows["b_fft.py"]["family"] is None
    assert any("fft" in op for op in rows["b_fft.py"]["ops"])
    assert not marker.exists(), "problem code ran outside the sandbox"
    assert "covered 2 of 3 problems" in done.stdout


def test_coverage_shows_each_problems_kernel_plan_in_text_and_json(tmp_path):
    (tmp_path / "a_conv_pool.py").write_text(COVERED)
    (tmp_path / "b_fft.py").write_text(UNCOVERED)
    done = run_coverage(tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    rows = {p["file"]: p for p in json.loads(done.stdout.strip().splitlines()[-1])["problems"]}
    plan = rows["a_conv_pool.py"]["plan"]
    assert plan["covered"] is True and plan["family"] == "conv"
    assert plan["pattern"] == "multi-stage" and plan["refused"] is None
    assert [(k["kernel"], k["pattern"], k["ops"], k["epilogue"]) for k in plan["kernels"]] == [
        ("kh_stage0_conv", "convolution + epilogue", ["conv", "relu"], ["relu"]),
        ("kh_stage1_pool", "pooling", ["pool"], [])]
    refused = rows["b_fft.py"]["plan"]
    assert refused["covered"] is False and refused["kernels"] == []
    assert refused["refused"]["ops"] == rows["b_fft.py"]["ops"]
    assert refused["refused"]["reason"] == rows["b_fft.py"]["message"]
    text = done.stdout.splitlines()
    at = next(i for i, line in enumerate(text) if line.endswith(" a_conv_pool.py"))
    assert text[at + 1].strip() == ("kernel 0 kh_stage0_conv [convolution + epilogue]: "
                                    "conv → relu; fused epilogue: relu")
    assert text[at + 2].strip() == "kernel 1 kh_stage1_pool [pooling]: pool"


def test_coverage_refuses_a_missing_folder_clearly(tmp_path):
    done = run_coverage(tmp_path / "nope")
    assert done.returncode == 2
    assert "is not a folder" in done.stderr
