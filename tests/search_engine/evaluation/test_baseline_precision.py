"""Baselines are timed at the candidate's precision policy, and say so: under `strict` TF32 is
off everywhere, under `tf32` on, under `bf16` the model runs in bf16 autocast; each
baseline records its precision, the switches in effect and its own error."""

from __future__ import annotations

import pytest
import torch

from search_engine.evaluation import baseline_precision as bp
from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.pipeline import evaluate
from search_engine.evaluation.reference import BaselineCache
from search_engine.problems import load_problem

from .conftest import candidate


class _Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(64, 32)

    def forward(self, x):
        return torch.relu(self.fc(x))


def _timed_state() -> dict:
    return {**bp.backend_flags(), "autocast": torch.is_autocast_enabled("cpu"),
            "autocast_dtype": torch.get_autocast_dtype("cpu")}


def _run(policy: str, problem_dtype: str = "float32"):
    """time_baselines on a CPU model, with a `measure` that records what was in effect."""
    model = _Linear().eval()
    x = torch.randn(16, 64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        reference64 = [torch.relu(torch.nn.functional.linear(
            x.double(), model.fc.weight.double(), model.fc.bias.double()))]
    seen = []

    def measure(fn):
        seen.append(_timed_state())
        with torch.no_grad():
            fn(x)
        return {"median_ms": 1.0, "iqr_ms": 0.0, "samples": 1, "method": "test"}

    timing = bp.time_baselines(model, [[x]], measure, lambda: reference64, policy=policy,
                               device="cpu", compile_too=True,
                               expected_dtypes=["torch.float32"], problem_dtype=problem_dtype)
    return timing, seen


@pytest.fixture(autouse=True)
def _pytorch_defaults():
    """Start every test from PyTorch's defaults (cuDNN TF32 on, matmul TF32 off)."""
    with bp.torch_switches(cudnn_tf32=True, matmul_tf32=False):
        yield


def test_strict_baselines_run_with_tf32_off_everywhere():
    timing, seen = _run("strict")
    assert seen == [{"cudnn_allow_tf32": False, "matmul_allow_tf32": False,
                     "float32_matmul_precision": "highest", "autocast": False,
                     "autocast_dtype": seen[0]["autocast_dtype"]}]
    eager = timing["eager"]
    assert eager["precision"] == bp.BASELINE_PRECISION["strict"]
    assert eager["backend"]["cudnn_allow_tf32"] is False
    assert eager["error"]["within_tolerance"] is True
    assert eager["error"]["tolerance_class"] == "fp32"
    assert eager["error"]["rel_norm_error"] < 1e-6
    # the switches are PyTorch's defaults again afterwards
    assert bp.backend_flags()["cudnn_allow_tf32"] is True
    assert timing["compile"]["median_ms"] is None  # the CPU never times torch.compile


def test_tf32_baselines_run_with_tf32_on():
    timing, seen = _run("tf32")
    assert seen[0]["cudnn_allow_tf32"] is True and seen[0]["matmul_allow_tf32"] is True
    assert seen[0]["float32_matmul_precision"] == "high" and seen[0]["autocast"] is False
    assert timing["eager"]["precision"] == bp.BASELINE_PRECISION["tf32"]
    assert timing["eager"]["error"]["tolerance_class"] == "tf32"


def test_bf16_baselines_run_in_bf16_autocast_and_measure_their_error():
    timing, seen = _run("bf16")
    assert seen[0]["autocast"] is True and seen[0]["autocast_dtype"] == torch.bfloat16
    error = timing["eager"]["error"]
    # bf16 math is visibly less exact than fp32, and still inside the bf16 tolerance
    assert 1e-4 < error["rel_norm_error"] < 2e-2
    assert error["within_tolerance"] is True and error["tolerance_class"] == "bf16"
    strict_error = _run("strict")[0]["eager"]["error"]["rel_norm_error"]
    assert strict_error < error["rel_norm_error"] / 100
    assert not torch.is_autocast_enabled("cpu")


def test_a_baseline_outside_the_candidates_tolerance_is_labelled_so():
    outputs = [torch.ones(8) * 1.01]
    reference = [torch.ones(8, dtype=torch.float64)]
    error = bp.baseline_error(outputs, reference, ["torch.float32"], "strict", "float32")
    assert error["within_tolerance"] is False
    assert error["rel_norm_error"] == pytest.approx(0.01, rel=1e-3)


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="unknown precision policy"):
        with bp.baseline_precision("fp8", "cpu"):
            pass


def test_cached_baselines_are_kept_per_policy_and_version(monkeypatch, tmp_path):
    """The on-disk key includes the policy and BASELINE_VERSION: baselines timed under
    PyTorch's defaults (before the change) or another policy are never reused."""
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    problem = load_problem(_problem_source())
    cache = BaselineCache(str(tmp_path))
    config = EvaluationConfig()
    keys = {p: cache.key(problem, [(1, 1.0, 0.0)], 1, "cuda", config, 1 << 20, p)
            for p in ("strict", "tf32", "bf16")}
    assert len(set(keys.values())) == 3
    monkeypatch.setattr(bp, "BASELINE_VERSION", bp.BASELINE_VERSION + 1)
    assert cache.key(problem, [(1, 1.0, 0.0)], 1, "cuda", config, 1 << 20, "strict") \
        != keys["strict"]


def _problem_source() -> str:
    return '''
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
def get_inputs():
    return [torch.randn(4, 64)]
def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("policy", ["strict", "bf16"])
def test_evaluate_records_each_baselines_precision_and_error(softmax_problem, policy):
    config = EvaluationConfig(trials=2, interpreter_reps=1, ncu="off", ghost_replay=False)
    r = evaluate(softmax_problem, candidate("clean_softmax"), target="interpreter",
                 precision_policy=policy, timeout_s=60, config=config)
    assert r.status == "correct", r.message
    eager = r.timing["eager"]
    assert eager.precision == bp.BASELINE_PRECISION[policy] == r.baseline_precision
    assert eager.backend["cudnn_allow_tf32"] is (policy != "strict")
    assert eager.error["within_tolerance"] is True
    assert eager.error["rel_norm_error"] is not None
    data = r.to_dict()
    assert data["baseline_precision"] == bp.BASELINE_PRECISION[policy]
    assert data["timing"]["eager"]["error"]["tolerance_class"] == \
        ("fp32" if policy == "strict" else "bf16")
