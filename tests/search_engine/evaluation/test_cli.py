"""`python -m search_engine evaluate` as a user runs it."""

import json
import subprocess
import sys
from pathlib import Path

from search_engine.problems_library import LIBRARY_DIR

from .conftest import CANDIDATES

REPO = Path(__file__).resolve().parents[3]
PROBLEM = str(LIBRARY_DIR / "softmax.py")


def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "search_engine", "evaluate", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=timeout)


def test_json_last_line_is_the_result():
    p = cli("--problem", PROBLEM, "--candidate", str(CANDIDATES / "clean_softmax.py"),
            "--target", "interpreter", "--timeout", "60", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout.strip().splitlines()[-1])
    assert data["status"] == "correct"
    for key in ("message", "correctness", "timing", "speedup_vs_eager", "speedup_vs_compile",
                "coverage", "diagnostics", "integrity_flags", "reward", "logs"):
        assert key in data
    assert data["timing"]["candidate"]["method"] == "interpreter"
    assert len(data["correctness"]) >= 5


def test_readable_summary_says_why_rejected():
    p = cli("--problem", PROBLEM, "--candidate", str(CANDIDATES / "decoy_softmax.py"),
            "--target", "interpreter")
    assert p.returncode == 0
    assert "REJECTED: integrity check failed" in p.stdout
    assert "torch.softmax" in p.stdout and "why:" in p.stdout


def test_bad_input_is_a_clear_error():
    p = cli("--problem", "/no/such/problem.py", "--candidate", str(CANDIDATES / "hang.py"),
            "--json")
    assert p.returncode == 2
    assert "cannot read problem file" in json.loads(p.stdout.strip().splitlines()[-1])["message"]
    p = cli("--problem", PROBLEM, "--candidate", str(CANDIDATES / "hang.py"), "--size", "dim")
    assert p.returncode == 2 and "NAME=VALUE" in p.stderr


def test_precision_flag_is_validated_and_recorded():
    p = cli("--problem", PROBLEM, "--candidate", str(CANDIDATES / "syntax_error.py"),
            "--precision", "tf32", "--json", "--target", "interpreter")
    data = json.loads(p.stdout.strip().splitlines()[-1])
    assert data["status"] == "compile_error" and data["precision_policy"] == "tf32"
    assert cli("--problem", PROBLEM, "--candidate", "x.py", "--precision", "fp8").returncode == 2
