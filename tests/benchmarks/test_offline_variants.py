"""The offline-variants benchmark classifies and checks problems and reports them honestly:
a covered problem whose kernel matches is ok, an uncovered one names its op, and the case
files of every area are KernelBench-format sources."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks.offline_variants import __main__ as variants
from benchmarks.offline_variants.harness import problem


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))


def test_a_folder_of_problems_is_checked_and_summarised(tmp_path, capsys):
    folder = tmp_path / "problems"
    folder.mkdir()
    (folder / "scaled_tanh.py").write_text(problem("", "torch.tanh(x) * 2.0", "torch.randn(5, 7)"))
    (folder / "median.py").write_text(problem("", "torch.median(x, dim=1).values",
                                              "torch.randn(5, 7)"))
    out = tmp_path / "rows.json"
    assert variants.main(["--dir", str(folder), "--draws", "0", "--json-out", str(out)]) == 0
    rows = {r["problem"]: r for r in json.loads(out.read_text())}
    assert rows["scaled_tanh"]["outcome"] == "ok" and rows["scaled_tanh"]["family"]
    assert rows["median"]["outcome"] == "not_covered" and "median" in rows["median"]["detail"]
    printed = capsys.readouterr().out
    summary = {line.split()[0]: line.split()[1:] for line in printed.splitlines()[-4:-1]}
    assert summary["all"] == ["2", "1", "1", "0"]  # problems, ok, not covered, wrong


def test_every_area_holds_problem_sources():
    import importlib

    for area in variants.AREAS:
        cases = importlib.import_module(f"benchmarks.offline_variants.{area}").CASES
        assert len(cases) > 50, area
        assert all("class Model" in s and "def get_inputs" in s for s in cases.values()), area


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(SystemExit):
        variants.main(["nonsense"])
    with pytest.raises(SystemExit):
        variants.main(["--dir", str(tmp_path / "missing")])
