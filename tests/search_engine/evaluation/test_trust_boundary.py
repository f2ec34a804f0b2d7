"""The trust boundary: what a candidate's process can reach, forge or defer gets it nowhere.

Every candidate here runs with the static checks OFF, so the runtime layers (the parent's
own comparisons, ghost replay, the protocol, the sandbox) must catch it by themselves;
`test_static_checks.py` covers the same classes at the source level.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import CANDIDATES

RUNTIME = CANDIDATES / "runtime"


def runtime_candidate(name: str) -> str:
    return (RUNTIME / f"{name}.py").read_text()


def flags(result) -> set[str]:
    return {f.check for f in result.integrity_flags}


@pytest.fixture
def run_unchecked(run_eval):
    def run(name: str, **changes):
        return run_eval(runtime_candidate(name), static_checks=False, **changes)

    return run


# -- class 1: torch (or NumPy) does the work by a path no check names --------------------------

@pytest.mark.parametrize("name, check", [
    ("getattr_side_path", "runtime.torch_computed_result"),
    ("inline_module", "runtime.torch_computed_result"),
    ("aten_private_op", "runtime.ghost_replay"),
    ("expand_decoy", "runtime.ghost_replay"),
    ("dispatch_escape", "runtime.dispatch_escape"),
    ("python_in_kernel", "runtime.torch_in_kernel"),
    ("numpy_writeback", "runtime.host_compute"),
])
def test_side_path_work_is_caught_without_naming_the_path(run_unchecked, name, check):
    r = run_unchecked(name)
    assert r.status == "hack_suspected", (name, r.status, r.message)
    assert check in flags(r), (name, flags(r))
    assert r.reward == 0


def test_ghost_replay_reports_what_it_saw(run_unchecked):
    r = run_unchecked("aten_private_op")
    ghost = r.diagnostics["ghost_replay"]
    assert ghost["passed"] is True and "matched" in ghost["note"]


def test_tensor_subclass_output_is_refused(run_unchecked):
    r = run_unchecked("tensor_subclass")
    assert r.status == "incorrect"
    assert "not a plain torch.Tensor" in r.message


# -- class 2: trusted state is not in the candidate's process ----------------------------------

def test_reference_is_not_reachable_from_the_candidate(run_unchecked):
    r = run_unchecked("reads_reference")
    assert r.status == "compile_error"
    assert "no reference in reach" in r.message


# -- class 3: forged reports -------------------------------------------------------------------

def test_forged_reply_then_suicide_is_a_hack_not_a_result(run_unchecked):
    r = run_unchecked("forged_reply")
    assert r.status in ("hack_suspected", "runtime_error"), r.message
    assert r.status != "correct" and r.reward == 0
    if r.status == "hack_suspected":
        assert "protocol.violation" in flags(r)


# -- class 5: deferred work --------------------------------------------------------------------

def test_outputs_are_taken_when_the_call_returns(run_unchecked):
    r = run_unchecked("deferred_work")
    assert r.status != "correct" and r.reward == 0


# -- false positives ---------------------------------------------------------------------------

def test_reused_output_buffer_is_correct(run_unchecked):
    r = run_unchecked("reused_output_buffer")
    assert r.status == "correct", r.message
    assert not [f for f in r.integrity_flags if f.severity == "hack"]


def test_clean_kernel_passes_ghost_replay(clean_softmax_result):
    r = clean_softmax_result
    assert r.status == "correct"
    assert r.diagnostics["ghost_replay"]["passed"] is False
    assert r.diagnostics["ghost_replay"]["torch_results_matching"] == 0
    assert r.coverage > 0.9  # bytes the kernel really loaded and stored


# -- odd outputs never crash -------------------------------------------------------------------

@pytest.mark.parametrize("name, words", [
    ("odd_output_dict", "returned a dict"),
    ("odd_output_string", "returned a str"),
    ("odd_output_huge_tuple", "returned 100000 values"),
])
def test_odd_outputs_get_a_status_and_a_message(run_unchecked, name, words):
    r = run_unchecked(name)
    assert r.status == "incorrect" and words in r.message


def test_odd_output_through_the_cli_prints_json(softmax_problem, tmp_path):
    problem = tmp_path / "problem.py"
    problem.write_text(softmax_problem.source)
    proc = subprocess.run(
        [sys.executable, "-m", "search_engine", "evaluate", "--problem", str(problem),
         "--candidate", str(RUNTIME / "tensor_subclass.py"), "--target", "interpreter",
         "--json", "--trials", "2"],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[3])
    data = json.loads(proc.stdout)
    assert data["status"] in ("incorrect", "hack_suspected"), data["message"]


# -- the trial plan keeps a saturating reference informative -----------------------------------

HARDSIGMOID = '''
import torch
from torch import nn

class Model(nn.Module):
    def forward(self, x):
        return torch.nn.functional.hardsigmoid(x)

def get_inputs():
    return [torch.rand(16, 64)]

def get_init_inputs():
    return []
'''

HARDSIGMOID_KERNEL = '''
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def hardsigmoid_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.minimum(tl.maximum(x / 6.0 + 0.5, 0.0), 1.0)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        hardsigmoid_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        return y
'''


def test_shifted_trial_is_adapted_instead_of_a_problem_defect(run_eval):
    from search_engine.problems import Problem

    r = run_eval(HARDSIGMOID_KERNEL, problem=Problem.from_source(HARDSIGMOID, "hardsigmoid"))
    assert r.status == "correct", r.message
    notes = r.diagnostics["trial_plan_notes"]
    assert any("degenerate" in n and "shift 3" in n for n in notes)
    assert len({t.seed for t in r.correctness}) == 5


CUMPROD = '''
import torch
from torch import nn

class Model(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=1)

def get_inputs():
    return [torch.rand(8, 30) + 0.5]

def get_init_inputs():
    return []
'''

CUMPROD_KERNEL = '''
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def cumprod_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=1.0)
    tl.store(y_ptr + row * n_cols + cols, tl.cumprod(x, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        cumprod_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
'''


def test_a_trial_beyond_the_output_dtype_is_adapted_not_failed(run_eval):
    """At scale 30 a cumprod of 30 values is ~1e44: finite in float64, inf in float32 for
    any correct kernel. The trial gets a milder scale instead of failing the kernel."""
    from search_engine.problems import Problem

    r = run_eval(CUMPROD_KERNEL, problem=Problem.from_source(CUMPROD, "cumprod"))
    assert r.status == "correct", r.message
    notes = r.diagnostics["trial_plan_notes"]
    assert any("overflows float32" in n and "scale 30" in n for n in notes), notes


BCE = '''
import torch
from torch import nn
import torch.nn.functional as F

class Model(nn.Module):
    def forward(self, p, y):
        return F.binary_cross_entropy(p, y, reduction="none")

def get_inputs():
    return [torch.rand(8, 30) * 0.9 + 0.05, torch.rand(8, 30)]

def get_init_inputs():
    return []
'''

BCE_KERNEL = '''
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def bce_kernel(p_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.5)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    log_p = tl.maximum(tl.log(p), -100.0)
    log_q = tl.maximum(tl.log(1.0 - p), -100.0)
    tl.store(out_ptr + offs, -(y * log_p + (1.0 - y) * log_q), mask=mask)


class ModelNew(nn.Module):
    def forward(self, p, y):
        p, y = p.contiguous(), y.contiguous()
        out = torch.empty_like(p)
        bce_kernel[(triton.cdiv(p.numel(), 256),)](p, y, out, p.numel(), BLOCK=256)
        return out
'''


def test_a_trial_outside_the_references_domain_is_adapted_not_a_defect(run_eval):
    """Binary cross-entropy takes probabilities: a scaled or shifted trial draws inputs
    outside [0, 1] and the reference raises. That trial gets a milder draw the reference
    accepts, and a correct kernel is judged correct on every trial."""
    from search_engine.problems import Problem

    r = run_eval(BCE_KERNEL, problem=Problem.from_source(BCE, "bce"))
    assert r.status == "correct", r.message
    notes = r.diagnostics["trial_plan_notes"]
    assert any("the reference raised RuntimeError" in n for n in notes), notes
    assert len({t.seed for t in r.correctness}) == 5


def test_a_reference_raising_on_its_own_inputs_is_still_the_problems_error(run_eval):
    from search_engine.problems import Problem, ProblemError

    outside = BCE.replace("torch.rand(8, 30) * 0.9 + 0.05", "torch.rand(8, 30) + 1.5")
    with pytest.raises(ProblemError, match="between 0 and 1"):
        run_eval(BCE_KERNEL, problem=Problem.from_source(outside, "bce_outside"))


def test_a_problem_degenerate_on_its_own_inputs_is_still_a_defect(run_eval):
    from search_engine.problems import Problem

    constant = HARDSIGMOID.replace("torch.rand(16, 64)", "torch.rand(16, 64) + 10.0")
    r = run_eval(HARDSIGMOID_KERNEL, problem=Problem.from_source(constant, "saturated"))
    assert r.status == "problem_defect"
    assert "constant" in r.message


# -- secrets and escapes end to end -------------------------------------------------------------

def test_parent_secrets_never_reach_the_result(run_eval, monkeypatch):
    monkeypatch.setenv("KERNELHUB_TEST_SECRET_TOKEN", "hunter2-very-secret")
    source = (RUNTIME / "getattr_side_path.py").read_text() + '''

def _leak():
    import os
    found = []
    for pid in ("self", str(os.getppid()), "1"):
        try:
            found.append(open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace"))
        except OSError as exc:
            found.append(repr(exc))
    print("LEAK:", found)

_leak()
'''
    r = run_eval(source, static_checks=False)
    assert "hunter2-very-secret" not in json.dumps(r.to_dict())


@pytest.mark.parametrize("name", ["clean_autotune", "clean_reused_buffer",
                                  "clean_softmax_helper_method", "clean_version_shim"])
def test_false_positives_pass_end_to_end(run_eval, name):
    """Static checks on, sandbox on: autotune under the interpreter, version shims, a helper
    named like a torch op and a reused output buffer are all clean."""
    r = run_eval((CANDIDATES / "static" / f"{name}.py").read_text())
    assert r.status == "correct", (name, r.message)
    assert not [f for f in r.integrity_flags if f.severity == "hack"]
