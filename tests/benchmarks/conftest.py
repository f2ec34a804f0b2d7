"""Shared by the suite-runner tests: the repository root (where `python -m benchmarks` runs)
on sys.path, and a helper that runs the command the way a user does."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def bench_cli():
    def run(*args, timeout=300):
        env = dict(os.environ, TRITON_INTERPRET="1")
        return subprocess.run([sys.executable, "-m", "benchmarks", *map(str, args)], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=timeout)
    return run
