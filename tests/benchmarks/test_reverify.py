"""The runner's own re-verification of the search's best kernel (in its process, against a
float64 reference, with the evaluator's tolerance table), before it is timed."""

import math

import pytest
import torch

from benchmarks import runner
from benchmarks.runner import RunOptions, matches_reference, measure
from benchmarks.suite import SUITE_DIR, load_problem_file
from search_engine.evaluation.tolerances import tolerance_for

STRICT = tolerance_for("strict", "float32")
SOFTMAX = load_problem_file(SUITE_DIR / "l1_023_softmax_fp32.py", "tiny")
GOOD = '''import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
'''
OFF_BY_A_LITTLE = GOOD.replace("return e / e.sum", "return 1.001 * e / e.sum")


@pytest.mark.parametrize("chunk", [1 << 26, 7])  # whole tensors, and many ragged chunks
def test_tolerance_test_matches_the_evaluator_in_chunks(monkeypatch, chunk):
    monkeypatch.setattr(runner, "COMPARE_CHUNK", chunk)
    reference = torch.randn(9, 13, dtype=torch.float64)
    assert matches_reference(reference.float(), reference, STRICT)[0]
    assert not matches_reference((reference * 1.01).float(), reference, STRICT)[0]
    spiked = reference.clone().float()
    spiked[4, 5] += 1.0  # one element far off: the norm may pass, the elementwise test not
    assert not matches_reference(spiked, reference, STRICT)[0]
    holed = reference.clone().float()
    holed[0, 0] = math.nan
    assert matches_reference(holed, reference, STRICT) == (False, math.inf)
    assert not matches_reference(reference.float()[:, :12], reference, STRICT)[0]


def test_a_wrong_best_kernel_is_caught_and_never_timed():
    options = RunOptions(compile_backend="eager", scale="tiny")
    good = measure(SOFTMAX, {"source": GOOD}, options, "cpu")
    assert good["verified"] and good["best_ms"] > 0 and good["rel_norm_error"] < 1e-6
    assert good["eager_ms"] > 0 and good["compile_ms"] > 0 and good["eager_ms_repeat"] > 0
    wrong = measure(SOFTMAX, {"source": OFF_BY_A_LITTLE}, options, "cpu")
    assert wrong["verified"] is False and "best_ms" not in wrong
    assert wrong["rel_norm_error"] == pytest.approx(1e-3, rel=0.01)
    broken = measure(SOFTMAX, {"source": "raise RuntimeError('no kernel here')"}, options,
                     "cpu")
    assert "no kernel here" in broken["reverify_error"] and "best_ms" not in broken
    assert broken["compile_ms"] > 0  # the baselines were still measured
