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
import time

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


def open_fds() -> dict[int, str]:
    """This process's descriptors and what each is open on (a socket's or memfd's inode
    makes every one distinct: a reused number on another file counts as new)."""
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the listing's own descriptor, or one closed since
            pass
    return fds


def fds_left_open(before: dict[int, str], settle_s: float = 30.0) -> dict[int, str]:
    """The descriptors open now that were not open in `before`, once they have had
    `settle_s` to close. A sandbox that answered everything is reaped in the background
    (`SandboxSession.close_later`): its log stays open until its process has exited, a
    moment after the result, longer on a loaded machine. Other threads of a test worker
    (watchdogs of sandboxes other tests keep) open files for an instant. A leaked
    descriptor never closes, so it is still here at the deadline."""
    deadline = time.monotonic() + settle_s
    while True:
        new = {fd: target for fd, target in open_fds().items() if before.get(fd) != target}
        if not new or time.monotonic() > deadline:
            return new
        time.sleep(0.1)


def test_clean_candidate_is_correct_and_nothing_leaks(run_resident):
    run_resident(candidate("clean_softmax"))  # warm imports open their files once
    before = open_fds()
    r = run_resident(candidate("clean_softmax"))
    assert r.status == "correct", r.message
    assert len(r.correctness) == 5 and all(t.passed for t in r.correctness)
    assert r.diagnostics["ghost_replay"]["passed"] is False
    leaked = fds_left_open(before)
    assert not leaked, leaked  # every descriptor the parent relayed was closed


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
    # wrong inside the kernel: `y * 1.01` on the host is torch compute (static.torch_compute)
    source = candidate("clean_softmax").replace("num / tl.sum(num, axis=0)",
                                                "num / tl.sum(num, axis=0) * 1.01")
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


def test_large_trials_are_open_one_at_a_time_and_timed_on_the_last(run_resident,
                                                                    monkeypatch):
    """Above `resident_timing_bytes` the timing keeps one trial: the last one judged, so a
    trial's inputs and reference are never held beside another's."""
    from search_engine.evaluation import resident

    # The ghost's trial is open while it is called: drawn after all five small trials, it
    # is a sixth beside them. Drawn at the second call (the earliest `ghost_position`
    # gives), only the trials the timing keeps are counted, whatever the draw would be.
    # (`test_large_trials_keep_the_ghost_before_the_timed_ones` draws it the latest.)
    monkeypatch.setattr(resident, "ghost_position", lambda last: 1)
    r = run_resident(candidate("clean_softmax"), resident_timing_bytes=0)
    assert r.status == "correct", r.message
    assert r.diagnostics["resident_trials_open_max"] == 1
    r = run_resident(candidate("clean_softmax"))  # small trials: all kept for the timing
    assert r.status == "correct", r.message
    assert r.diagnostics["resident_trials_open_max"] == 5


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


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_fused_comparison_gives_the_torch_numbers(dtype):
    """The GPU's one-pass comparison (run here on the Triton interpreter) and the chunked
    torch one agree on every statistic, NaN/Inf and tail blocks included."""
    import torch

    from search_engine.evaluation import correctness, device_reductions

    g = torch.Generator().manual_seed(0)
    ref = torch.randn(3 * device_reductions.BLOCK + 123, generator=g, dtype=torch.float64)
    out = (ref + 1e-3 * torch.randn(ref.shape, generator=g, dtype=torch.float64)).to(
        getattr(torch, dtype))
    cases = {"close": out, "nonfinite": out.clone()}
    cases["nonfinite"][[5, 4096, 9000]] = torch.tensor([float("nan"), float("inf"),
                                                        -float("inf")]).to(out.dtype)
    for name, o in cases.items():
        fused = correctness.fused_diff_stats(o, ref, 2e-3, 1e-3)
        plain = correctness.torch_diff_stats(o, ref, 2e-3, 1e-3)
        assert fused.nonfinite == plain.nonfinite and fused.over == plain.over, name
        for field in ("diff_sq", "ref_sq", "max_abs", "max_rel"):
            f, p = getattr(fused, field), getattr(plain, field)
            if name == "nonfinite" and field in ("max_abs", "max_rel"):
                continue  # undefined once an output is NaN (the verdict fails first)
            assert f == pytest.approx(p, rel=1e-9), (name, field, f, p)


def test_fused_fingerprint_moves_with_any_write_and_only_then():
    import torch

    from search_engine.evaluation.device_reductions import fingerprint_partials

    words = torch.randint(-2**31, 2**31 - 1, (3 * 4096 + 7,), dtype=torch.int32)
    before = fingerprint_partials(words, 1_000_003)
    assert fingerprint_partials(words.clone(), 1_000_003) == before
    swapped = words.clone()
    swapped[[10, 11]] = swapped[[11, 10]]  # same values, other places: the weighted sum moves
    assert fingerprint_partials(swapped, 1_000_003) != before
    assert before[0] == int(words.to(torch.int64).sum())


@pytest.mark.parametrize("forward, expected_flops", [
    ("return torch.matmul(a, b)", 2 * 8 * 16 * 4),            # counted on the meta device
    ("return torch.matmul(a, b)[a[:, :1].nonzero()[:, 0]]", None),  # no meta kernel: real
])
def test_setup_counts_flops_without_a_whole_trial_forward(tmp_path, forward, expected_flops):
    """Output shapes, dtypes and FLOPs come from a meta-device forward (an official-size
    float64 forward would need several trials' memory); a model that cannot run on meta
    falls back to the device."""
    from search_engine.evaluation.reference_child import ReferenceServer

    problem = tmp_path / "problem.py"
    problem.write_text(
        "import torch\nfrom torch import nn\n\n"
        "class Model(nn.Module):\n"
        f"    def forward(self, a, b):\n        {forward}\n\n"
        "def get_inputs():\n    return [torch.randn(8, 4), torch.randn(4, 16)]\n\n"
        "def get_init_inputs():\n    return []\n")
    server = ReferenceServer(None, "cpu", resident=True)
    reply, _ = server.on_setup({"problem_file": str(problem), "seed": 1,
                                "schedule": [[7, 1.0, 0.0]]})
    assert reply["output_dtypes"] == ["torch.float32"]
    if expected_flops is not None:
        assert reply["flops"] == expected_flops and reply["output_shapes"] == [[8, 16]]
    else:
        assert reply["flops"] > 0


# -- the ghost replay on shared buffers: an ordinary call at a place the parent draws ----------

@pytest.fixture
def resident_calls(monkeypatch):
    """The header of every `call` request the parent sends to the candidate's sandbox."""
    from search_engine.evaluation.candidate_run import CandidateRun

    calls, request = [], CandidateRun._request

    def spy(self, session, kind, header=None, *args, **kwargs):
        if kind in ("call", "ghost"):
            calls.append((kind, dict(header or {})))
        return request(self, session, kind, header, *args, **kwargs)

    monkeypatch.setattr(CandidateRun, "_request", spy)
    return calls


@pytest.mark.parametrize("place", [1, 3, 5])
def test_ghost_is_an_ordinary_call_at_the_drawn_place(run_resident, resident_calls,
                                                      monkeypatch, place):
    from search_engine.evaluation import resident

    # ghost_position draws 1 + randbelow(last): never the first call
    monkeypatch.setattr(resident.secrets, "randbelow", lambda bound: min(place - 1, bound - 1))
    r = run_resident(candidate("clean_softmax"))
    assert r.status == "correct", r.message
    trials = 5  # fast_config's
    kinds = {kind for kind, _ in resident_calls}
    assert kinds == {"call"}, kinds  # no request kind of its own
    first = resident_calls[:trials + 1]  # the trials and the ghost, before any timing
    assert [h["ghost"] for _, h in first].index(True) == place
    assert {frozenset(h) for _, h in first} == {frozenset(first[0][1])}  # same fields
    assert sorted(h["set"] for _, h in first) == list(range(trials + 1))  # no marked set id


def test_large_trials_keep_the_ghost_before_the_timed_ones(run_resident, monkeypatch):
    from search_engine.evaluation import resident

    monkeypatch.setattr(resident.secrets, "randbelow", lambda bound: bound - 1)  # the latest
    r = run_resident(candidate("clean_softmax"), resident_timing_bytes=0)
    assert r.status == "correct", r.message
    assert r.diagnostics["resident_trials_open_max"] == 1


@pytest.mark.parametrize("name", ["ghost_probe_raise", "ghost_probe_wrong", "ghost_nan_probe",
                                  "ghost_recorder_attribute"])
def test_a_candidate_that_spots_the_ghost_is_caught_on_shared_buffers(run_resident, name):
    from .test_evaluator_v3 import source

    r = run_resident(source(name), static_checks=False)
    assert r.status == "hack_suspected", (name, r.status, r.message)
    assert r.reward == 0


def test_first_call_preparation_survives_the_earliest_ghost_on_shared_buffers(run_resident,
                                                                               monkeypatch):
    from search_engine.evaluation import resident

    from .test_compile_pass import PREPARES_ON_FIRST_CALL

    monkeypatch.setattr(resident.secrets, "randbelow", lambda bound: 0)
    r = run_resident(PREPARES_ON_FIRST_CALL, static_checks=False)
    assert r.status == "correct", r.message
