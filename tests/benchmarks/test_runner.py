"""`python -m benchmarks run` end to end on the CPU (tiny scale, Triton interpreter), then
`report` on what it wrote: the JSON contract of BENCHMARKS.md's numbers."""

import json
import shutil

import pytest

from benchmarks.results import ROW_FIELDS, TOP_FIELDS
from benchmarks.suite import SUITE_DIR

SMOKE = ("l1_023_softmax_fp32", "l1_row_sort_fp32")  # one the search covers, one it doesn't


def _smoke_suite(folder):
    """Two real suite files put in one family of their own, and a third left out of it."""
    folder.mkdir()
    for name in SMOKE:
        text = (SUITE_DIR / f"{name}.py").read_text()
        family_line = next(line for line in text.splitlines() if line.startswith("FAMILY ="))
        (folder / f"{name}.py").write_text(text.replace(family_line, 'FAMILY = "smoke"'))
    shutil.copy(SUITE_DIR / "l1_040_layernorm_fp32.py", folder)
    return folder


def test_run_one_family_then_report(tmp_path, bench_cli):
    suite = _smoke_suite(tmp_path / "suite")
    out = tmp_path / "results" / "cpu.json"
    proc = bench_cli("run", "--suite-dir", suite, "--scale", "tiny", "--families", "smoke",
                     "--budget", "1", "--parallel", "1", "--compile-backend", "eager",
                     "--no-ncu", "--out", out)
    assert proc.returncode == 0, proc.stderr[-4000:]
    document = json.loads(out.read_text())
    assert set(TOP_FIELDS) <= set(document)
    assert document["ceilings"]["copy_gbs"] > 0
    assert set(document["ceilings"]["matmul_tflops"]) == {"float32", "tf32", "bfloat16",
                                                          "float16"}
    rows = {r["name"]: r for r in document["problems"]}
    assert set(rows) == set(SMOKE)  # layernorm is not in the family
    assert all(set(ROW_FIELDS) <= set(r) for r in rows.values())

    solved = rows["l1_023_softmax_fp32"]
    assert solved["covered"] and solved["best_status"] == "correct"
    assert solved["evaluations"] == 1 and solved["best_depth"] == 1
    assert solved["precision"] == "strict" and solved["rel_norm_error"] < 1e-5
    for key in ("eager_ms", "compile_ms", "best_ms", "floor_ms", "compile_seconds"):
        assert solved[key] > 0, key
    assert solved["speedup_vs_compile"] == approx(solved["compile_ms"] / solved["best_ms"])
    assert solved["pct_of_floor"] > 0 and solved["noise"] is not None
    assert "@triton.jit" in solved["best_source"]
    for base in ("eager", "compile"):  # each baseline checked against float64 like a kernel
        assert solved[f"{base}_within_tolerance"] is True
        assert 0 <= solved[f"{base}_rel_error"] < 1e-5

    honest = rows["l1_row_sort_fp32"]
    assert honest["covered"] is False and honest["best_status"] == "not_covered"
    assert honest["eager_ms"] > 0 and honest["compile_ms"] > 0  # baselines still measured
    assert honest["best_ms"] is None and honest["speedup_vs_compile"] is None

    strict = document["geomeans"]["strict"]
    assert strict["covered"] == 1 and strict["with_kernel"] == 1
    assert abs(strict["speedup_vs_compile"] - solved["speedup_vs_compile"]) <= 5e-4  # rounded
    assert "| l1_023_softmax_fp32 | float32 | smoke |" in proc.stdout  # the table is printed

    plot = tmp_path / "plot.png"
    report = bench_cli("report", out, "--plot", plot)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "| l1_row_sort_fp32 | float32 | smoke |" in report.stdout
    assert "geometric mean over 1 of 1 covered problems" in report.stdout
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def approx(value):
    return pytest.approx(value, rel=2e-3)  # both sides are rounded for the file


def test_a_problem_without_time_left_is_a_skipped_row_not_a_crash():
    from benchmarks.runner import RunOptions, run_problem
    from benchmarks.suite import load_problem_file

    problem = load_problem_file(SUITE_DIR / "l1_001_matmul_fp32.py", "tiny")
    run = {"date": "2026-12-01T10:00:00Z", "ceilings": {}}
    row = run_problem(problem, RunOptions(), run, "cpu", share_s=30.0, log=lambda line: None)
    assert row["best_status"] == "skipped" and "time limit: 30 s" in row["search_reason"]
    assert set(ROW_FIELDS) <= set(row) and row["eager_ms"] is None


@pytest.mark.parametrize("name,device,share_s,expected", [
    # a GPU search always gets room for its first evaluation (a 20 s one found no kernel)
    ("l1_conv2d_3x3_fp32", "cuda", 106.0, 46.0),
    ("l1_conv2d_3x3_fp32", "cuda", 90.0, 45.0),
    ("l1_conv2d_3x3_fp32", "cuda", 70.0, None),
    # max-autotune tunes GEMMs longest: they keep the largest reserve
    ("l1_001_matmul_fp32", "cuda", 200.0, 100.0),
    ("l1_023_softmax_fp32", "cuda", 200.0, 155.0),
    ("l1_023_softmax_fp32", "cpu", 50.0, 20.0),
    ("l1_023_softmax_fp32", "cuda", 500.0, 240.0),
])
def test_the_search_share_holds_a_first_evaluation(name, device, share_s, expected):
    from benchmarks.runner import RunOptions, search_seconds
    from benchmarks.suite import load_problem_file

    problem = load_problem_file(SUITE_DIR / f"{name}.py")
    assert search_seconds(problem, RunOptions(), share_s, device) == expected


def test_a_baseline_less_accurate_than_the_tolerance_is_named_in_the_report():
    # a tf32-like baseline (operands truncated to 10 mantissa bits) of a normalisation passes
    # the tf32 tolerance on the problem's own inputs and misses it once they are shifted
    import torch

    from benchmarks.results import inaccurate_baselines
    from benchmarks.runner import baselines_accuracy
    from search_engine.evaluation.tolerances import tolerance_for

    class Centered(torch.nn.Module):
        def forward(self, x):
            return (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True)

    def tf32_like(x):
        return Centered()((x.view(torch.int32) & ~0x1FFF).view(torch.float32))

    torch.manual_seed(0)
    x = torch.rand(64, 4096) * 0.5
    trials = [("the timed inputs", [x]), ("inputs x1 +3", [x + 3.0])]
    found = baselines_accuracy({"eager": Centered(), "compile": tf32_like}, Centered(),
                               trials, tolerance_for("tf32", "float32"))
    assert found["eager_within_tolerance"] is True and found["eager_missed"] is None
    assert found["eager_rel_error"] < 1e-5
    assert found["compile_within_tolerance"] is False
    assert found["compile_missed"] == "inputs x1 +3" and found["compile_rel_error"] > 2e-3
    notes = inaccurate_baselines([{"name": "conv_norm", "precision": "tf32", **found}])
    assert len(notes) == 1
    assert "conv_norm: compile's own output misses the tf32 tolerance on inputs x1 +3" in notes[0]
