"""Resident evaluation (`EvaluationConfig.resident`): tensors shared between the sandboxes,
compared where the reference lives, never copied through the parent.

On the CPU the buffers are shared-memory files (`device_share` memfd backend); on a GPU
they are CUDA virtual-memory allocations (`test_gpu.py` runs those). The protocol and every
check are the same, so these tests hold the resident path to the copying path's verdicts.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from search_engine.evaluation import wire
from search_engine.evaluation.device_share import Sharer

from .conftest import candidate


def checks(result):
    return {f.check for f in result.integrity_flags}


@pytest.fixture
def run_resident(run_eval):
    def run(source: str, **changes):
        return run_eval(source, resident="on", **changes)
    return run


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_clean_candidate_is_correct_and_nothing_leaks(run_resident):
    run_resident(candidate("clean_softmax"))  # warm imports open their files once
    before = open_fds()
    r = run_resident(candidate("clean_softmax"))
    assert r.status == "correct", r.message
    assert len(r.correctness) == 5 and all(t.passed for t in r.correctness)
    assert r.diagnostics["ghost_replay"]["passed"] is False
    assert open_fds() <= before  # every descriptor the parent relayed was closed


@pytest.mark.parametrize("name, check", [
    ("result_reuse", "runtime.result_reuse"),
    ("timing_cache", "runtime.result_caching_in_timing"),
    ("input_zeroing", "runtime.input_mutation"),
    ("output_alias", "runtime.output_aliases_input"),
])
def test_runtime_checks_hold_on_shared_buffers(run_resident, name, check):
    r = run_resident(candidate(name))
    assert r.status == "hack_suspected", (name, r.status, r.message)
    assert check in checks(r), (name, checks(r))


def test_ghost_replay_and_spotter_work_on_shared_buffers(run_resident):
    from .test_trust_boundary import runtime_candidate

    r = run_resident(runtime_candidate("getattr_side_path"), static_checks=False)
    assert r.status == "hack_suspected"
    assert "runtime.torch_computed_result" in checks(r), checks(r)


def test_wrong_output_is_incorrect_with_the_error(run_resident):
    source = candidate("clean_softmax").replace("return y", "return y * 1.01")
    assert source != candidate("clean_softmax")
    r = run_resident(source)
    assert r.status == "incorrect", r.message
    assert "relative norm error" in r.message


def test_mutated_input_is_restored_for_later_trials(run_resident):
    r = run_resident(candidate("input_zeroing"))
    mutations = [t for t in r.integrity_flags if t.check == "runtime.input_mutation"]
    assert mutations and "elements changed" in mutations[0].evidence


# -- the pieces


def test_memfd_buffers_cross_processes_without_copies(tmp_path):
    import torch

    sharer = Sharer("memfd")
    shared = sharer.export(torch.arange(12, dtype=torch.float32).reshape(3, 4))
    parent, child = socket.socketpair()
    script = (
        "import socket, sys, torch\n"
        "from search_engine.evaluation import wire\n"
        "from search_engine.evaluation.device_share import Sharer\n"
        "s = socket.socket(fileno=int(sys.argv[1]))\n"
        "h, _ = wire.recv(s, 0, max_fds=4)\n"
        "t = Sharer('memfd').import_all(h.pop('fds'), h['shared'])[0].tensor\n"
        "t.mul_(2)\n"
        "wire.send(s, {'sum': float(t.sum())})\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(child.fileno())],
                            pass_fds=(child.fileno(),), cwd=os.getcwd())
    child.close()
    wire.send(parent, {"shared": [shared.meta()]}, fds=[shared.fd])
    reply, _ = wire.recv(parent, 0)
    proc.wait(timeout=60)
    assert reply["sum"] == 2 * sum(range(12))
    assert torch.equal(shared.tensor, 2 * torch.arange(12.0).reshape(3, 4))  # same memory
    sharer.release_all()
    assert not sharer.alive


def test_unasked_descriptors_are_refused_and_closed():
    a, b = socket.socketpair()
    r, w = os.pipe()
    wire.send(a, {"kind": "reply"}, fds=[r])
    with pytest.raises(wire.ProtocolError, match="descriptors"):
        wire.recv(b, 0)  # none asked for
    os.close(r)
    os.close(w)


def test_declared_descriptor_count_must_match():
    a, b = socket.socketpair()
    body = b'{"kind": "reply", "fd_count": 2}'
    a.sendall(len(body).to_bytes(8, "big") + body)
    with pytest.raises(wire.ProtocolError, match="declares 2"):
        wire.recv(b, 0, max_fds=4)


def test_bad_shared_meta_is_rejected_and_descriptor_closed():
    r, w = os.pipe()
    sharer = Sharer("memfd")
    with pytest.raises(wire.ProtocolError):
        sharer.import_all([r], [{"dtype": "object", "shape": [2], "nbytes": 16}])
    with pytest.raises(OSError):
        os.fstat(r)  # closed by the failed import
    os.close(w)


def test_chunked_comparison_matches_the_whole_tensor_one(monkeypatch):
    import torch

    from search_engine.evaluation import correctness
    from search_engine.evaluation.tolerances import tolerance_for

    torch.manual_seed(0)
    ref = torch.randn(1000, dtype=torch.float64)
    out = (ref + 1e-7 * torch.randn(1000, dtype=torch.float64)).float()
    tol = tolerance_for("strict", "float32")
    whole = correctness.compare_trial(0, 1, [out], [ref], ["torch.float32"], tol)
    monkeypatch.setattr(correctness, "CHUNK", 7)
    chunked = correctness.compare_trial(0, 1, [out], [ref], ["torch.float32"], tol)
    assert whole.passed and chunked.passed
    assert chunked.max_abs_error == pytest.approx(whole.max_abs_error)
    assert chunked.rel_norm_error == pytest.approx(whole.rel_norm_error)
    assert correctness.rel_norm_distance([out], [ref]) == pytest.approx(
        float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref)))


def test_large_trials_get_their_reference_in_batch_slices(run_resident):
    r = run_resident(candidate("clean_softmax"), reference_chunk_bytes=2048)
    assert r.status == "correct", r.message
    assert r.diagnostics["reference_method"].startswith("float64 in batch slices")


def test_batch_slices_are_refused_when_rows_depend_on_each_other(run_resident):
    from search_engine.problems import load_problem

    problem = load_problem(
        "import torch\nfrom torch import nn\n\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x - x.mean(dim=0, keepdim=True)\n\n"
        "def get_inputs():\n    return [torch.randn(16, 32)]\n\n"
        "def get_init_inputs():\n    return []\n")
    source = (
        "import torch\nimport triton\nimport triton.language as tl\nfrom torch import nn\n\n"
        "@triton.jit\ndef centre(x_ptr, y_ptr, R, C: tl.constexpr):\n"
        "    col = tl.program_id(0)\n    rows = tl.arange(0, 16)\n"
        "    x = tl.load(x_ptr + rows * C + col)\n"
        "    tl.store(y_ptr + rows * C + col, x - tl.sum(x, 0) / R)\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        x = x.contiguous()\n        y = torch.empty_like(x)\n"
        "        centre[(x.shape[1],)](x, y, x.shape[0], C=x.shape[1])\n        return y\n")
    r = run_resident(source, problem=problem, reference_chunk_bytes=256)
    assert r.status == "correct", r.message
    assert r.diagnostics["reference_method"] == "float64, whole trial"
