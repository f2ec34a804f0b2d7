"""`optimize --screen N --finalists K --minutes M` (issue 29): the summary says how many
candidates were screened and how many fully evaluated."""

import argparse
import json
import re

import pytest

from search_engine.search.cli_commands import screen_count, time_limit
from search_engine.search.config import GPU_SCREEN

from .conftest import LIBRARY
from .test_cli_optimize_suite import cli

TINY = ("--size", "batch_size=4", "--size", "dim=32")


@pytest.mark.slow
def test_optimize_screens_and_prints_screened_and_evaluated_counts(tmp_path):
    tree_file = tmp_path / "tree.json"
    proc = cli("optimize", "--problem", str(LIBRARY / "softmax.py"), "--target", "interpreter",
               *TINY, "--screen", "3", "--finalists", "1", "--children", "2", "--budget", "2",
               "--no-ncu", "--out", str(tree_file))
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = re.search(r"candidates: (\d+) screened, (\d+) fully evaluated", proc.stdout)
    assert counts, proc.stdout[-2000:]
    nodes = json.loads(tree_file.read_text())
    screened = [n for n in nodes if n["origin"].get("screen")]
    assert int(counts.group(1)) == len(screened) >= 3
    assert int(counts.group(2)) == 2 == sum(1 for n in nodes[1:] if n["result"])
    assert any(n["status"] == "screened" for n in nodes)
    assert all(n["result"] is None for n in nodes if n["status"] == "screened")


def test_optimize_refuses_a_bad_screen_count():
    proc = cli("optimize", "--problem", str(LIBRARY / "softmax.py"), "--target", "interpreter",
               "--screen", "many", "--json")
    assert proc.returncode == 2
    assert "--screen must be a number or auto" in json.loads(proc.stdout.splitlines()[-1])[
        "message"]


def test_screen_auto_is_off_on_the_interpreter_and_large_on_a_gpu():
    assert screen_count(argparse.Namespace(screen="auto", target="interpreter")) == 0
    assert screen_count(argparse.Namespace(screen="auto", target="h200")) == GPU_SCREEN >= 32
    assert screen_count(argparse.Namespace(screen="5", target="h200")) == 5


def test_minutes_and_max_seconds_take_the_shorter_limit():
    assert time_limit(argparse.Namespace(max_seconds=None, minutes=3)) == 180.0
    assert time_limit(argparse.Namespace(max_seconds=100.0, minutes=3)) == 100.0
    assert time_limit(argparse.Namespace(max_seconds=None, minutes=None)) is None
    with pytest.raises(ValueError):
        time_limit(argparse.Namespace(max_seconds=None, minutes=0))
