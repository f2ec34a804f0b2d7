"""The screening throughput bench (issue 29): its configurations are the search's (the
default first, distinct random draws), and a run screens them all and reports per-minute
numbers with the phases, on the interpreter with a tiny problem."""

import json

import pytest

from benchmarks import screening_throughput as bench

# KernelBench's softmax pattern at tiny shapes (the interpreter runs it)
TINY_FILE = bench.ROOT / "benchmarks" / "kernelbench_like" / "level1" / "23_Softmax.py"
TINY = TINY_FILE.read_text()


def test_the_configurations_start_at_the_default_and_are_distinct():
    from search_engine.synthesis.offline import OfflineSynthesizer
    from search_engine.synthesis.offline.synthesizer import family_module

    drawn = bench.configurations(TINY, 5, "h200", "strict", seed=0)
    assert 2 <= len(drawn) <= 5
    assert len({c["source"] for c in drawn}) == len(drawn)
    an = OfflineSynthesizer().analysis(TINY)
    assert drawn[0]["params"] == family_module(an).default_params(an, "h200", "strict")


def test_a_run_screens_every_configuration_and_writes_its_rows(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    out = tmp_path / "rows.json"
    assert bench.main(["--files", str(TINY_FILE), "--configs", "3", "--lanes", "1,2",
                       "--target", "interpreter", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["lanes"] for r in rows] == [1, 2]
    for row in rows:
        assert row["problem"] == "23_Softmax" and row["configs"] == row["passed"] == 3
        assert row["sandboxes"] == row["lanes"] and row["per_minute"] > 0
        assert row["fastest_ms"] > 0 and row["failures"] == []
        assert {"compile_s", "check_s", "timing_s"} <= set(row["phases"])


def test_bad_arguments_are_refused_with_a_message(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--lanes", "eight"])
    assert "--lanes 'eight'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--files", str(tmp_path / "missing.py")])
    assert "no problem file" in capsys.readouterr().err


def test_a_configuration_that_fails_is_named_with_its_parameters(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    real = bench.configurations(TINY, 1, "interpreter", "strict", seed=0)
    broken = {"params": {"BLOCK_R": 3}, "source": real[0]["source"].replace(
        "class ModelNew", "raise RuntimeError('broken')\nclass ModelNew")}
    monkeypatch.setattr(bench, "configurations", lambda *args: real + [broken])
    out = tmp_path / "rows.json"
    assert bench.main(["--files", str(TINY_FILE), "--lanes", "1", "--target", "interpreter",
                       "--out", str(out)]) == 0
    row = json.loads(out.read_text())[0]
    assert row["passed"] == 1 and row["configs"] == 2
    assert row["failures"] == [{"index": 1, "reason": row["failures"][0]["reason"],
                                "params": {"BLOCK_R": 3}}]
    assert "broken" in row["failures"][0]["reason"]
