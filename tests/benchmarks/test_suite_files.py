"""The problem files of benchmarks/suite: KernelBench format, official shapes, metadata that
agrees with what the problems really move, and a tiny scale that runs on a CPU."""

import pytest
import torch

from benchmarks.suite import (
    SUITE_DIR, SuiteError, families, load_problem_file, load_suite, select,
)

OFFICIAL = load_suite("official")
TINY = load_suite("tiny")


def test_the_suite_has_enough_problems_in_several_dtypes():
    assert len(OFFICIAL) >= 24
    assert {p.dtype for p in OFFICIAL} == {"float32", "bfloat16", "float16"}
    # a family is one GPU call of at most 10 minutes: keep them small
    assert all(len(names) <= 4 for names in families(OFFICIAL).values())


@pytest.mark.parametrize("name,sizes", [
    ("l1_023_softmax_fp32", {"batch_size": 4096, "dim": 393216}),
    ("l1_024_log_softmax_fp32", {"batch_size": 4096, "dim": 393216}),
    ("l1_026_gelu_fp32", {"batch_size": 4096, "dim": 393216}),
    ("l1_036_rmsnorm_fp32", {"batch_size": 112, "features": 64, "dim1": 512, "dim2": 512}),
    ("l1_040_layernorm_fp32", {"batch_size": 16, "features": 64, "dim1": 256, "dim2": 256}),
    ("l1_088_new_gelu_fp32", {"batch_size": 8192, "dim": 8192}),
    ("l1_001_matmul_fp32", {"N": 4096}),
    ("l2_076_gemm_bias_relu_fp32", {"batch_size": 1024, "in_features": 8192,
                                    "out_features": 8192}),
])
def test_kernelbench_official_shapes(name, sizes):
    problem = next(p for p in OFFICIAL if p.name == name)
    assert {k: problem.problem.sizes[k] for k in sizes} == sizes


@pytest.mark.parametrize("problem", TINY, ids=lambda p: p.name)
def test_tiny_problem_runs_and_its_metadata_matches_its_tensors(problem):
    module = problem.module()
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).eval()
    inputs = module.get_inputs()
    with torch.no_grad():
        output = model(*inputs)
    floating = [x for x in inputs if x.is_floating_point()]
    assert {str(x.dtype) for x in floating} == {f"torch.{problem.dtype}"}
    assert str(output.dtype) == f"torch.{problem.dtype}"
    moved = sum(x.numel() * x.element_size() for x in inputs) + output.numel() * \
        output.element_size()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    # MIN_BYTES: every input read and the output written once, parameters at most once
    assert moved <= problem.min_bytes <= moved + params
    official = next(p for p in OFFICIAL if p.name == problem.name)
    assert official.min_bytes > 1000 * problem.min_bytes  # TINY_SIZES really shrink it
    if problem.min_flops:
        assert problem.min_flops % 2 == 0 and official.min_flops > problem.min_flops


def test_selection_by_family_and_name_and_its_errors():
    chosen = select(OFFICIAL, ["softmax"], ["l1_001_matmul_fp32"])
    assert {p.family for p in chosen} == {"softmax", "matmul"}
    assert len(chosen) == len(families(OFFICIAL)["softmax"]) + 1
    with pytest.raises(SuiteError, match="unknown family 'nope'; known: .*softmax"):
        select(OFFICIAL, ["nope"])
    with pytest.raises(SuiteError, match="unknown problem 'nope'"):
        select(OFFICIAL, [], ["nope"])


def test_a_file_without_metadata_is_a_clear_error(tmp_path):
    path = tmp_path / "bare.py"
    path.write_text((SUITE_DIR / "l1_023_softmax_fp32.py").read_text()
                    .replace("MIN_FLOPS = 0\n", ""))
    with pytest.raises(SuiteError, match="missing suite metadata MIN_FLOPS"):
        load_problem_file(path)
    path.write_text(path.read_text().replace("\nTINY_SIZES", "\nMIN_FLOPS = 0\nTINY_SIZES")
                    .replace('"dim": 96', '"width": 96'))
    with pytest.raises(SuiteError, match="TINY_SIZES: cannot override width"):
        load_problem_file(path, "tiny")
    assert load_problem_file(path).min_bytes == 2 * 4096 * 393216 * 4  # official still loads
