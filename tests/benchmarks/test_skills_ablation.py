"""The skills ablation's parts: the interpreter's ranking proxy reads the template's
parameters from the candidate, is deterministic and moves with the shape; the proxy
executor keeps the real verdict and evaluates a candidate once; the comparison counts
evaluations to reach the no-skill best; a bad skills file is a clear error."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from benchmarks import skills_ablation as sa
from search_engine.evaluation.result import EvaluationResult
from search_engine.protocols import EvaluationRequest
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.spaces import templates


@pytest.fixture(scope="module")
def softmax():
    synth = OfflineSynthesizer()
    prob = sa.problem("softmax", {"batch_size": 32, "dim": 256})
    return synth, prob, synth.analysis(prob.source)


def test_the_proxy_reads_the_template_parameters_and_ranks_them(softmax):
    synth, prob, an = softmax
    params = templates.default_params(an, "interpreter", "strict")
    source = synth.render(prob.source, params)
    assert sa.template_params(source) == params
    assert sa.template_params("class ModelNew: pass") is None
    time_default, klass = sa.proxy_time_us(an, params)
    assert klass in ("memory-bound", "latency-bound")
    assert sa.proxy_time_us(an, params)[0] == time_default  # deterministic
    wide = {**params, "ROWS": 8, "BLOCK_R": 256, "num_warps": 16, "variant": "single"}
    narrow = {**params, "ROWS": 1, "BLOCK_R": 256, "num_warps": 1, "variant": "looped"}
    assert sa.proxy_time_us(an, wide)[0] < sa.proxy_time_us(an, narrow)[0]
    other = synth.analysis(sa.problem("softmax", {"batch_size": 8, "dim": 1024}).source)
    assert sa.proxy_time_us(other, {**wide, "BLOCK_R": 1024})[0] != sa.proxy_time_us(an, wide)[0]


class CountingExecutor:
    def __init__(self, status="correct"):
        self.status, self.calls = status, 0

    def submit(self, request):
        self.calls += 1
        future = Future()
        future.set_result(EvaluationResult(status=self.status, coverage=1.0, reward=1.0))
        return future

    def shutdown(self):
        pass


@pytest.mark.parametrize("status", ["correct", "incorrect"])
def test_the_proxy_executor_keeps_the_verdict_and_evaluates_once(softmax, status):
    synth, prob, an = softmax
    inner = CountingExecutor(status)
    executor = sa.ProxyExecutor(inner, synth)
    source = synth.render(prob.source, templates.default_params(an, "interpreter", "strict"))
    request = EvaluationRequest(prob.source, source, "interpreter")
    first, again = executor.submit(request).result(), executor.submit(request).result()
    assert inner.calls == 1 and first.status == again.status == status
    if status == "correct":
        modelled = sa.proxy_time_us(an, sa.template_params(source))[0]
        assert first.speedup_vs_eager == pytest.approx(sa.proxy_eager_us(an) / modelled,
                                                       rel=1e-3)
        assert first.speedup_label.startswith("proxy") and first.reward > 1.0
        assert first.diagnostics["bottleneck"]["reason"] == "proxy"
    else:
        assert first.speedup_vs_eager is None and first.reward == 1.0


def test_a_cancelled_proxy_future_ignores_its_late_evaluation(softmax, caplog):
    """The search cancels what is in flight at its time limit; the evaluation finishing
    later must neither raise in its callback nor revive the cancelled future."""
    synth, prob, an = softmax
    pending = Future()

    class SlowExecutor(CountingExecutor):
        def submit(self, request):
            self.calls += 1
            return pending

    executor = sa.ProxyExecutor(SlowExecutor(), synth)
    source = synth.render(prob.source, templates.default_params(an, "interpreter", "strict"))
    proxied = executor.submit(EvaluationRequest(prob.source, source, "interpreter"))
    assert proxied.cancel()
    with caplog.at_level("ERROR", logger="concurrent.futures"):
        pending.set_result(EvaluationResult(status="correct", coverage=1.0, reward=1.0))
    assert proxied.cancelled() and not caplog.records


def test_evaluations_to_reach_the_no_skill_best():
    plain = [None, 1.0, 1.2, 1.1, 1.5, 1.4]
    skilled = [1.3, 1.5, 1.6]
    arms = {"none": (plain, [], 1.0), "skills": (skilled, [], 1.0)}
    row = sa.compare("softmax", {"dim": 8}, 0, arms, 0.0, 2)
    assert (row["none_evals_to_its_best"], row["skills_evals_to_none_best"]) == (5, 2)
    assert row["ratio"] == 0.4 and row["skills_not_worse"] and row["best_skills"] == 1.6
    never = sa.compare("softmax", {"dim": 8}, 1, {"none": (plain, [], 1.0),
                                                  "skills": ([1.0, 1.1], [], 1.0)}, 0.0, 2)
    assert never["skills_evals_to_none_best"] is None and not never["skills_not_worse"]
    text = sa.summary([row, never])
    assert "(median over seeds): 0/1" in text and "runs ending worse with skills: 1/2" in text
    assert sa.evals_to_reach([None, 0.9], 1.0) is None


def test_a_bad_skills_file_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "skills.json"
    path.write_text("[oops")
    with pytest.raises(ValueError, match="cannot read skills"):
        sa.main(["--skills", str(path), "--families", "softmax"])
    with pytest.raises(SystemExit):
        sa.main(["--families", "nope"])
    assert "unknown families" in capsys.readouterr().err


def test_every_family_sizes_a_problem_the_synthesizer_covers():
    """Each family's distil and target sizes build its library problem; at the tiny scale
    the offline synthesizer analyses every one (the conv family included)."""
    from search_engine.synthesis.offline import OfflineSynthesizer

    synth = OfflineSynthesizer()
    for family, (_, scales) in sa.FAMILIES.items():
        for scale, (distil_sizes, targets) in scales.items():
            for sizes in [distil_sizes, *targets]:
                prob = sa.problem(family, sizes)
                if scale == "tiny":
                    assert synth.analysis(prob.source).family, (family, sizes)
