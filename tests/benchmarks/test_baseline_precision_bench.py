"""`python -m benchmarks baselines`: OLD (PyTorch defaults) and NEW (policy) baselines of one
problem, side by side, with their errors; on the CPU only eager is timed."""

from __future__ import annotations

import json

from benchmarks import baseline_precision as bench

SOURCE = '''
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 16)
    def forward(self, x):
        return torch.relu(self.fc(x))
def get_inputs():
    return [torch.randn(8, 32)]
def get_init_inputs():
    return []
'''


def test_rows_carry_old_and_new_baselines_and_their_errors(tmp_path):
    out = tmp_path / "baselines.json"
    rows = bench.run([("linear_relu", SOURCE)], "bf16", out, 60.0, "cpu", log=lambda _: None)
    row = rows[0]
    assert row["old_eager_ms"] > 0 and row["new_eager_ms"] > 0
    assert row["old_eager_within_tolerance"] is True  # fp32 math passes bf16's tolerance
    # bf16 autocast is measurably less exact than the old fp32 baseline
    assert row["new_eager_rel_norm_error"] > 10 * row["old_eager_rel_norm_error"]
    assert row["eager_new_over_old"] is not None and "old_compile_ms" not in row
    stored = json.loads(out.read_text())
    assert stored["policy"] == "bf16" and stored["rows"][0]["problem"] == "linear_relu"
    assert "linear_relu" in bench.table(rows)


def test_a_problem_that_fails_is_reported_not_fatal(tmp_path):
    rows = bench.run([("broken", "raise ValueError('no model here')"), ("ok", SOURCE)],
                     "strict", tmp_path / "b.json", 60.0, "cpu", log=lambda _: None)
    assert "ProblemError" in rows[0]["error"] and rows[1]["new_eager_ms"] > 0
