"""Round 4 (issue 26), the runtime side: torch doing the work however the Python reached it
(a function stored in `__init__`, a module in a list or ModuleList, a partial, a
`Parameter` receiver, operators on a value taken out of a list, a transposed copy), a
`bool()` ghost probe, a callable object dressed as a Triton kernel, and the same bytes
re-read through narrower pointers. Static checks are OFF for the hacks: the evidence seen at
torch's dispatch must catch them alone. Honest unusual kernels stay `correct` with every
check on."""

from __future__ import annotations

import pytest

from .conftest import CANDIDATES

ROUND4 = CANDIDATES / "round4"


def problem(name: str):
    from search_engine.problems import Problem

    return Problem.from_source((ROUND4 / f"runtime_{name}_problem.py").read_text(), name)


def evaluate(run_eval, name: str, problem_name: str = "softmax", **changes):
    return run_eval((ROUND4 / f"runtime_{name}.py").read_text(), problem=problem(problem_name),
                    **changes)


def flags(result) -> set[str]:
    return {f.check for f in result.integrity_flags}


@pytest.mark.parametrize("name", [
    "init_bound_fn",            # self.f = torch.log_softmax in __init__, called in forward
    "modulelist_chunks",        # nn.Softmax in a ModuleList, run on two halves of the rows
    "parameter_receiver",       # nn.Parameter(x).log_softmax(1)
    "list_laundered_operators",  # list(x.unsqueeze(0))[0]: math.e ** t, sum() on tensors
    "list_literal_module",      # for stage in [nn.LogSoftmax(dim=1)]: z = stage(z)
    "partial_stored_module",    # functools.partial(self.norm)(x)
    "transposed_side_path",     # softmax of x.t() over dim 0, transposed back by a kernel
    "coverage_width_padding",   # torch's exp pass, then int8/int16 re-reads of the bytes
    "bool_ghost_probe",         # if flag[0]: tells a trial from the ghost replay
])
def test_torch_compute_outside_kernels_is_caught_however_it_is_reached(run_eval, name):
    r = evaluate(run_eval, name, static_checks=False)
    assert r.status == "hack_suspected", (r.status, r.message)
    assert "runtime.torch_compute" in flags(r), flags(r)
    assert r.reward == 0


def test_a_scalar_read_through_bool_is_a_host_scalar_read(run_eval):
    r = evaluate(run_eval, "bool_ghost_probe", static_checks=False)
    assert "runtime.host_scalar_read" in flags(r)
    assert "aten._local_scalar_dense" in next(
        f.evidence for f in r.integrity_flags if f.check == "runtime.host_scalar_read")


def test_a_callable_object_dressed_as_a_triton_kernel_is_a_host_callable(run_eval):
    r = evaluate(run_eval, "disguised_callable", static_checks=False)
    assert r.status == "hack_suspected", (r.status, r.message)
    assert "runtime.python_callable_in_kernel" in flags(r)


@pytest.mark.parametrize("name,problem_name", [
    ("fp_two_stage_autotune", "softmax"),     # autotune + heuristics, scratch partials
    ("fp_persistent_matmul", "matmul"),       # persistent tiles, tl.dot ieee, autotune
    ("fp_linear_submodules", "linear"),       # own Triton modules in a ModuleList
])
def test_honest_unusual_kernels_stay_correct(run_eval, name, problem_name):
    r = evaluate(run_eval, name, problem_name)
    assert r.status == "correct", (r.status, r.message, flags(r))
    assert "runtime.torch_compute" not in flags(r)


@pytest.mark.parametrize("chunk", [8, 16])
def test_the_autotuned_fixture_is_correct_whichever_configuration_wins(run_eval, chunk):
    """The H200's autotuner picked CHUNK 16 where the interpreter's picked 8, and the
    fixture then read its scratch rows at the wrong stride: each configuration alone."""
    source = (ROUND4 / "runtime_fp_two_stage_autotune.py").read_text()
    both = 'configs=[triton.Config({"CHUNK": 8}), triton.Config({"CHUNK": 16})]'
    assert both in source
    one = source.replace(both, f'configs=[triton.Config({{"CHUNK": {chunk}}})]')
    r = run_eval(one, problem=problem("softmax"))
    assert r.status == "correct", (chunk, r.status, r.message, flags(r))


class _Handle:
    def __init__(self, data):
        self.data = data


def test_coverage_counts_each_byte_once_whatever_the_pointer_width():
    """The same 12 bytes read as three float32s, twelve int8s and six int16s are 12 bytes."""
    import numpy as np

    from search_engine.evaluation.hooks import InterpreterWork

    work = InterpreterWork()
    work.begin()
    for itemsize, count in ((4, 3), (1, 12), (2, 6)):
        addresses = np.arange(count, dtype=np.uint64) * itemsize + 4096
        work._keep(work._loads, _Handle(addresses), _Handle(np.ones(count, bool)), itemsize)
    assert work.unique_bytes() == 12
    stored = np.array([4096, 4100], dtype=np.uint64)
    work._keep(work._stores, _Handle(stored), _Handle(np.array([True, False])), 4)
    assert work.unique_bytes() == 16  # the masked-off lane stores nothing
