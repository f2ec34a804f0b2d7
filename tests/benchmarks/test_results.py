"""Results files: several family runs merge into one by problem name; geometric means stay
per precision; bad files and arguments are clear errors that change nothing."""

import json

import pytest

from benchmarks import results
from benchmarks.results import ResultsError


def _run(date, machine="NVIDIA H200", scale="official"):
    return {"machine": machine, "date": date, "torch": "2.11.0", "triton": "3.6.0",
            "device": "cuda", "ceilings": {"copy_gbs": 4300.0, "matmul_tflops": {
                "float32": 50.0, "tf32": 400.0, "bfloat16": 700.0, "float16": 700.0}},
            "timing": "do_bench", "scale": scale, "settings": {}, "problems": [],
            "command": f"run at {date}"}


def _row(name, vs_compile, status="correct", precision="strict", depth=2, covered=True):
    row = dict.fromkeys(results.ROW_FIELDS)
    row.update(name=name, family="softmax", dtype="float32", covered=covered,
               best_status=status, precision=precision, best_depth=depth, evaluations=6)
    if vs_compile is not None:
        row.update(eager_ms=2.0, compile_ms=vs_compile, best_ms=1.0, speedup_vs_eager=2.0,
                   speedup_vs_compile=vs_compile, noise=0.01)
    return row


def _document(run, rows):
    return {"scale": run["scale"], "runs": [run], "problems": rows}


def test_later_rows_replace_earlier_ones_by_name_but_skipped_rows_never_do():
    first = _document(_run("2026-12-01T10:00:00Z"),
                      [_row("softmax", 0.8), _row("layernorm", 1.5)])
    second = _document(_run("2026-12-01T11:00:00Z"),
                       [_row("softmax", 1.25), _row("layernorm", None, status="skipped"),
                        _row("conv", None, status="not_covered", covered=False)])
    merged = results.merge([first, second])
    rows = {r["name"]: r for r in merged["problems"]}
    assert [r["name"] for r in merged["problems"]] == ["conv", "layernorm", "softmax"]
    assert rows["softmax"]["speedup_vs_compile"] == 1.25
    assert rows["layernorm"]["speedup_vs_compile"] == 1.5  # the skip kept the measurement
    assert merged["date"] == "2026-12-01T11:00:00Z" and len(merged["runs"]) == 2
    assert set(results.TOP_FIELDS) <= set(merged)
    strict = merged["geomeans"]["strict"]
    assert strict == {"covered": 2, "with_kernel": 2, "speedup_vs_eager": 2.0,
                      "speedup_vs_compile": pytest.approx((1.25 * 1.5) ** 0.5, abs=1e-3),
                      "worst_vs_compile": 1.25, "deeper_than_first_child": 2}
    # merging the same file twice changes nothing
    assert results.merge([merged, merged])["problems"] == merged["problems"]


def test_precisions_are_never_mixed_in_a_geometric_mean():
    rows = [_row("a", 2.0), _row("b", 8.0, precision="tf32", depth=1)]
    means = results.geomeans(rows)
    assert means["strict"]["speedup_vs_compile"] == 2.0
    assert means["tf32"]["speedup_vs_compile"] == 8.0
    assert means["tf32"]["deeper_than_first_child"] == 0


def test_write_rows_merges_into_an_existing_file(tmp_path):
    out = tmp_path / "h200.json"
    results.write_rows(out, _run("2026-12-01T10:00:00Z"), [_row("softmax", 0.9)])
    results.write_rows(out, _run("2026-12-01T10:30:00Z"), [_row("matmul", 1.1)])
    document = json.loads(out.read_text())
    assert [r["name"] for r in document["problems"]] == ["matmul", "softmax"]
    assert not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("other,message", [
    (_run("2026-12-01T11:00:00Z", machine="NVIDIA H100"), "different machines"),
    (_run("2026-12-01T11:00:00Z", scale="tiny"), "different scales"),
])
def test_runs_that_cannot_be_compared_are_not_merged(other, message):
    with pytest.raises(ResultsError, match=message):
        results.merge([_document(_run("2026-12-01T10:00:00Z"), [_row("a", 1.0)]),
                       _document(other, [_row("b", 1.0)])])


def test_merge_and_report_commands(tmp_path, bench_cli):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    results.write_rows(a, _run("2026-12-01T10:00:00Z"), [_row("softmax", 0.9)])
    results.write_rows(b, _run("2026-12-01T10:30:00Z"), [_row("matmul", 1.1)])
    merged = tmp_path / "all.json"
    proc = bench_cli("merge", a, b, "--out", merged)
    assert proc.returncode == 0, proc.stderr
    assert "2 problems from 2 files" in proc.stdout
    report = bench_cli("report", merged, "--no-plot")
    assert report.returncode == 0, report.stderr
    assert "| matmul | float32 | softmax |" in report.stdout
    assert "Noise (eager timed twice per problem): median 1.0 %" in report.stdout


@pytest.mark.parametrize("args,message", [
    (["run", "--families", "nope"], "unknown family 'nope'; known:"),
    (["run", "--problems", "l1_001_matmul_fp32,nope"], "unknown problem 'nope'"),
    (["run", "--budget", "0"], "--budget must be at least 1"),
    (["run", "--time-limit", "-5"], "--time-limit must be positive"),
    (["merge", "missing.json", "--out", "x.json"], "cannot read missing.json"),
    (["report", "{bad}"], "is not JSON"),
    (["report", "{other}"], "is not a benchmarks results file"),
    (["run", "--families", "softmax", "--out", "{other}"], "is not a benchmarks results file"),
])
def test_bad_arguments_are_clear_errors(tmp_path, capsys, args, message):
    from benchmarks.__main__ import main

    bad, other = tmp_path / "bad.json", tmp_path / "other.json"
    bad.write_text("{not json")
    other.write_text('{"status": "error"}')
    assert main([a.format(bad=bad, other=other) for a in args]) == 2
    assert message in capsys.readouterr().err
    assert other.read_text() == '{"status": "error"}'  # nothing stored was touched


def test_an_unknown_scale_is_refused_by_the_parser(capsys):
    from benchmarks.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--scale", "huge"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'huge'" in capsys.readouterr().err


# The H200's measured ceilings (suite run of 2026-12-04): fp32 SIMT 51 TFLOP/s, tf32 360.
H200_CEILINGS = {"copy_gbs": 4222.0,
                 "matmul_tflops": {"float32": 51.11, "tf32": 360.2, "bfloat16": 729.0}}
CONV_FLOPS, CONV_BYTES = 299_649_466_368, 1_577_615_872  # Conv2d + InstanceNorm, official


def test_a_strict_convolutions_floor_is_at_the_tf32x3_rate_not_the_simt_rate():
    from benchmarks.results import compute_peak, floor_ms

    floor = floor_ms(CONV_BYTES, CONV_FLOPS, "float32", "strict", H200_CEILINGS)
    assert floor == pytest.approx(CONV_FLOPS / (360.2 / 3 * 1e12) * 1e3, rel=1e-3)  # 2.50 ms
    assert compute_peak("fp32", H200_CEILINGS) == (pytest.approx(120.07, rel=1e-3), "tf32x3")
    # with no tf32 rate measured, the SIMT rate is all there is
    simt = {"copy_gbs": 4222.0, "matmul_tflops": {"float32": 51.11}}
    assert floor_ms(CONV_BYTES, CONV_FLOPS, "float32", "strict", simt) == pytest.approx(
        CONV_FLOPS / 51.11e12 * 1e3, rel=1e-3)


def test_the_tf32_policy_floor_uses_the_tf32_rate_and_memory_bound_work_the_copy_rate():
    from benchmarks.results import floor_ms

    tf32 = floor_ms(CONV_BYTES, CONV_FLOPS, "float32", "tf32", H200_CEILINGS)
    assert tf32 == pytest.approx(CONV_FLOPS / 360.2e12 * 1e3, rel=1e-3)
    softmax_bytes = 2 * 4096 * 393216 * 4
    assert floor_ms(softmax_bytes, 0, "float32", "strict", H200_CEILINGS) == pytest.approx(
        softmax_bytes / 4222e9 * 1e3, rel=1e-3)
