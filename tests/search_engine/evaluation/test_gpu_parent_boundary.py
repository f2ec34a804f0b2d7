"""Issue 26 on the H200 (skipped without CUDA): class 10 (links and FIFOs planted where the
parent reads, ncu included) and classes 7, 11, 12 where the GPU differs from the interpreter.
Self-contained: `python3 -m pytest --noconftest -p no:cacheprovider ...` on a GPU node."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

CANDIDATES = Path(__file__).parent / "candidates"
SECRET = "kernelhub-gpu-parent-boundary-secret-51c0"


def _evaluate(source: str, ncu: str = "off", **config_changes):
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.pipeline import evaluate
    from search_engine.problems_library import library_problem

    problem = library_problem("softmax", scale="small").with_sizes(batch_size=256, dim=1024)
    config = EvaluationConfig(ncu=ncu, time_compile_baseline=False, static_checks=False,
                              **config_changes)
    return evaluate(problem, source, target="auto", timeout_s=300, config=config)


def _runtime(name: str, **swaps: str) -> str:
    source = (CANDIDATES / "runtime" / f"{name}.py").read_text()
    for old, new in swaps.items():
        source = source.replace(old, new)
    return source


def test_planted_links_and_fifos_reach_nothing_on_the_gpu_ncu_included(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    ncu = "auto" if shutil.which("ncu") else "off"
    started = time.monotonic()
    r = _evaluate(_runtime("plants_links", **{'SECRET_FILE = ""': f"SECRET_FILE = {str(secret)!r}"}),
                  ncu=ncu)
    assert time.monotonic() - started < 600  # no FIFO held the parent
    assert r.status == "correct", (r.message, r.logs[-2000:])
    assert SECRET not in json.dumps(r.to_dict(), default=str)
    assert secret.read_text() == SECRET  # nothing was written through a link


@pytest.mark.parametrize("mode", ["deep", "huge", "garbage"])
def test_hostile_replies_are_protocol_violations_on_the_gpu(mode):
    r = _evaluate(_runtime("hostile_reply", **{'MODE = "deep"': f'MODE = "{mode}"'}))
    assert r.status == "hack_suspected", r.message
    assert "protocol.violation" in {f.check for f in r.integrity_flags}


def test_filling_the_workdir_is_stopped_on_the_gpu():
    from search_engine.evaluation.config import SandboxLimits

    r = _evaluate(_runtime("fills_disk"), limits=replace(SandboxLimits(), disk_bytes=64 << 20))
    assert r.status == "runtime_error" and "disk limit" in r.message, r.message


def test_a_tf32_dot_is_refused_under_strict_before_it_reaches_the_gpu():
    from search_engine.evaluation.integrity.static_checks import run_static_checks

    source = (CANDIDATES / "static" / "clean_autotune.py").read_text()
    assert not [f for f in run_static_checks(source) if f.severity == "hack"]
    dot = "tl.dot(a, b, input_precision='tf32')"
    flagged = run_static_checks(f"import triton.language as tl\nimport triton\n"
                                f"@triton.jit\ndef k(a, b):\n    return {dot}\n")
    assert "static.precision_mismatch" in {f.check for f in flagged}
