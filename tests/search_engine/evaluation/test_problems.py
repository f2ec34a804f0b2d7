"""KernelBench problem loading, guesses and size overrides; the example library."""

import pytest

from search_engine.problems import Problem, ProblemError, load_problem
from search_engine.problems_library import (
    GPU_SIZES,
    library_names,
    library_problem,
    library_solution,
)


def test_library_has_three_problems_with_solutions():
    assert library_names() == ["gemm_bias_relu", "layernorm", "softmax"]
    for name in library_names():
        assert "class ModelNew" in library_solution(name)


@pytest.mark.parametrize("name,family", [("softmax", "softmax"), ("layernorm", "normalization"),
                                         ("gemm_bias_relu", "gemm")])
def test_family_and_dtype_guess(name, family):
    p = library_problem(name)
    assert p.family == family and p.dtype == "float32"


def test_gpu_scale_rewrites_module_sizes():
    small = library_problem("softmax")
    big = library_problem("softmax", scale="gpu")
    assert small.sizes == {"batch_size": 32, "dim": 256}
    assert big.sizes == GPU_SIZES["softmax"]
    assert "batch_size = 4096" in big.source
    assert big.source_hash != small.source_hash


def test_env_var_selects_default_scale(monkeypatch):
    monkeypatch.setenv("KERNELHUB_PROBLEM_SCALE", "gpu")
    assert library_problem("layernorm").sizes == GPU_SIZES["layernorm"]


def test_unknown_size_override_names_the_known_sizes():
    with pytest.raises(ProblemError, match="batch_size=32"):
        library_problem("softmax").with_sizes(nope=3)


def test_not_a_kernelbench_problem():
    with pytest.raises(ProblemError, match="missing get_inputs, get_init_inputs"):
        Problem.from_source("class Model: pass\n")


def test_problem_syntax_error_and_missing_file(tmp_path):
    with pytest.raises(ProblemError, match="does not parse"):
        Problem.from_source("def (:\n")
    with pytest.raises(ProblemError, match="cannot read problem file"):
        load_problem(str(tmp_path / "missing.py"))


def test_bf16_dtype_guess():
    src = library_problem("softmax").source.replace("torch.randn(batch_size, dim)",
                                                     "torch.randn(batch_size, dim, dtype=torch.bfloat16)")
    assert Problem.from_source(src).dtype == "bfloat16"
