"""Issue 26, class 13: kinds of honest kernels the round-3 checks must keep passing, run end to
end on the interpreter (static checks ON) and asserted `correct`; autotune with several
configs is `candidates/static/clean_autotune.py`, run here too."""

from __future__ import annotations

import pytest

from .conftest import CANDIDATES

KINDS = ["false_positive/jit_helpers", "false_positive/parameter_submodules",
         "false_positive/two_kernel_pipeline", "false_positive/persistent_grid_stride",
         "false_positive/split_row_two_stage", "static/clean_autotune"]


@pytest.mark.parametrize("name", KINDS)
def test_honest_kernels_pass_every_static_check(name):
    from search_engine.evaluation.integrity.static_checks import run_static_checks

    source = (CANDIDATES / f"{name}.py").read_text()
    for policy in ("strict", "tf32", "bf16"):
        hacks = [f for f in run_static_checks(source, "float32", policy) if f.severity == "hack"]
        assert hacks == [], (policy, [(f.check, f.evidence) for f in hacks])


@pytest.mark.parametrize("name", KINDS)
def test_honest_kernels_are_correct(run_eval, name):
    r = run_eval((CANDIDATES / f"{name}.py").read_text(), timeout_s=240.0)
    assert r.status == "correct", (r.message, [(f.check, f.evidence) for f in r.integrity_flags])
