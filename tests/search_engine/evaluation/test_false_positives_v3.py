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


def test_a_module_dict_built_from_dict_keywords_is_construction_not_a_call():
    """MiniGPT's `nn.ModuleDict(dict(c_fc=nn.Linear(...), ...))` in __init__ holds modules for
    their parameters; dict's keywords are entries it never calls. A module handed to a
    builtin keyword that does call it (sorted's key) is still flagged."""
    from search_engine.evaluation.integrity.static_checks import run_static_checks

    base = (CANDIDATES / "false_positive/parameter_submodules.py").read_text()
    held = base.replace('        self.register_buffer("scale", torch.ones(1))\n',
                        '        self.register_buffer("scale", torch.ones(1))\n'
                        '        self.mlp = nn.ModuleDict(dict(fc=nn.Linear(4, 4), '
                        'act=nn.GELU()))\n')
    assert held != base
    hacks = [f for f in run_static_checks(held, "float32", "strict") if f.severity == "hack"]
    assert hacks == [], [(f.check, f.evidence) for f in hacks]
    called = held.replace("        x = x.contiguous()\n",
                          "        x = x.contiguous()\n"
                          "        order = sorted([x], key=self.mlp.fc)\n")
    assert called != held
    hacks = [f for f in run_static_checks(called, "float32", "strict") if f.severity == "hack"]
    assert hacks, "a module handed to sorted's key runs"
