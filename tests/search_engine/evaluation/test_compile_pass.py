"""The compile pass (`EvaluationConfig.compile_pass`, the child's `warm` request): the
candidate's kernels are compiled before its first call with every Triton launch a compile
and nothing run, then the model is built afresh. GPU targets use it by default; "on" runs
it on the interpreter too, where a launch that does not run is just as visible."""

from __future__ import annotations

from .conftest import candidate


def checks(result):
    return {f.check for f in result.integrity_flags}


# A legitimate first-call preparation: a kernel fills a buffer once, later calls use it.
# Had the compile pass's model survived, the buffer would hold whatever memory it was given.
# Prepares a per-column table on its first call (NaN until its fill kernel really ran) and
# multiplies the softmax by it in a second kernel: right only if the preparation ran for real.
# All its arithmetic is in its kernels (torch computing beside them is runtime.torch_compute).
PREPARES_ON_FIRST_CALL = candidate("clean_softmax").replace(
    '''class ModelNew(nn.Module):
    def forward(self, x):
        return launch(x.contiguous())''',
    '''@triton.jit
def fill_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), 1.0, tl.float32), mask=offs < n)


@triton.jit
def scale_kernel(y_ptr, s_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * n_cols + cols, mask=mask)
    s = tl.load(s_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, y * s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.prepared = None

    def forward(self, x):
        block = triton.next_power_of_2(x.shape[1])
        if self.prepared is None:
            self.prepared = torch.full((x.shape[1],), float("nan"), device=x.device)
            fill_kernel[(1,)](self.prepared, x.shape[1], BLOCK=block)
        y = launch(x.contiguous())
        out = torch.empty_like(y)
        scale_kernel[(y.shape[0],)](y, self.prepared, out, y.shape[1], BLOCK=block)
        return out''')


def test_compile_pass_keeps_clean_candidates_correct(run_eval):
    r = run_eval(candidate("clean_softmax"), compile_pass="on")
    assert r.status == "correct", r.message


def test_state_left_by_the_compile_pass_is_discarded(run_eval):
    r = run_eval(PREPARES_ON_FIRST_CALL, compile_pass="on", static_checks=False)
    assert r.status == "correct", r.message


def test_result_reuse_is_still_caught_after_the_compile_pass(run_eval):
    r = run_eval(candidate("result_reuse"), compile_pass="on")
    assert r.status == "hack_suspected", (r.status, r.message)
    assert "runtime.result_reuse" in checks(r), checks(r)


def test_a_broken_kernel_gets_the_same_status_with_or_without_the_pass(run_eval):
    broken = candidate("clean_softmax").replace("tl.exp(x)", "tl.exp(x, 3, 4)")
    with_pass = run_eval(broken, compile_pass="on")
    without = run_eval(broken, compile_pass="off")
    assert with_pass.status == without.status != "correct", (with_pass.status, without.status)


def test_a_bad_compile_pass_setting_is_a_clear_error():
    import pytest

    from search_engine.evaluation.config import EvaluationConfig

    with pytest.raises(ValueError, match="compile_pass must be auto, on or off"):
        EvaluationConfig(compile_pass="sometimes")


def test_first_call_preparation_survives_the_earliest_ghost(run_eval, monkeypatch):
    """The ghost replay (no-op launches) is never the model's first call: drawn as early as
    it can go, the preparation still runs for real and every trial is right."""
    import secrets

    monkeypatch.setattr(secrets, "randbelow", lambda bound: 0)
    r = run_eval(PREPARES_ON_FIRST_CALL, compile_pass="off", static_checks=False)
    assert r.status == "correct", r.message
    assert r.diagnostics["ghost_replay"]["passed"] is False  # the ghost ran, after call 0


def test_the_ghost_goes_anywhere_but_first():
    from search_engine.evaluation.timed_checks import ghost_position

    assert {ghost_position(5) for _ in range(400)} == {1, 2, 3, 4, 5}
    assert {ghost_position(1) for _ in range(20)} == {1}
