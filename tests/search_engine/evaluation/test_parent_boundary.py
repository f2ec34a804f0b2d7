"""Issue 26, classes 10-12: a parent that trusts no path and no byte, and a disk limit.

Hostile candidates (tests/.../candidates/runtime/, static checks OFF) plant links and FIFOs
where the parent reads, send replies no parser should meet, and fill the workdir; each test
asserts that the parent read nothing through them, did not hang, and still gave a status.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from search_engine.evaluation import wire
from search_engine.evaluation.config import EvaluationConfig, SandboxLimits
from search_engine.evaluation.isolation.untrusted_files import (
    UntrustedFileError, read_untrusted, write_fresh,
)

from .conftest import CANDIDATES

RUNTIME = CANDIDATES / "runtime"
SECRET = "kernelhub-parent-boundary-secret-7d2e"


def runtime_candidate(name: str, **swaps: str) -> str:
    source = (RUNTIME / f"{name}.py").read_text()
    for old, new in swaps.items():
        source = source.replace(old, new)
    return source


def flags(result) -> set[str]:
    return {f.check for f in result.integrity_flags}


@pytest.fixture
def secret_file(tmp_path) -> Path:
    path = tmp_path / "root-only-secret"
    path.write_text(SECRET)
    path.chmod(0o600)
    return path


# -- class 10: files in a sandbox-writable directory ----------------------------------------

def test_reads_refuse_links_and_fifos_without_blocking(tmp_path, secret_file):
    link, fifo = tmp_path / "link", tmp_path / "fifo"
    link.symlink_to(secret_file)
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(UntrustedFileError, match="symbolic link"):
        read_untrusted(link, 1 << 20)
    with pytest.raises(UntrustedFileError, match="not a regular file"):
        read_untrusted(fifo, 1 << 20)
    assert time.monotonic() - started < 5  # a FIFO with no writer did not block
    big = tmp_path / "big"
    big.write_bytes(b"a" * 1000 + b"END")
    assert read_untrusted(big, 3, tail=True) == b"END"
    assert len(read_untrusted(big, 10)) == 10


def test_writes_replace_a_planted_link_instead_of_following_it(tmp_path, secret_file):
    target = tmp_path / "ncu_inputs.pt"
    target.symlink_to(secret_file)
    write_fresh(target, b"inputs")
    assert secret_file.read_text() == SECRET  # the host file was not written through the link
    assert not target.is_symlink() and target.read_bytes() == b"inputs"


def test_planted_links_and_fifos_give_the_parent_nothing(run_eval, secret_file):
    source = runtime_candidate("plants_links", **{'SECRET_FILE = ""':
                                                  f"SECRET_FILE = {str(secret_file)!r}"})
    started = time.monotonic()
    r = run_eval(source, static_checks=False)
    assert time.monotonic() - started < 120
    assert r.status == "correct", r.message  # the kernel itself is right
    assert SECRET not in r.logs and SECRET not in json.dumps(r.to_dict(), default=str)
    assert "PATH=" not in r.logs  # /proc/self/environ was not read either


def test_the_ncu_replay_reads_no_planted_report(monkeypatch, secret_file):
    """ncu's CSV is written by the sandbox: a link or FIFO there is refused, not followed."""
    import torch

    from search_engine.evaluation import ncu_replay

    def fake_ncu(argv, workdir, **kw):  # the replay (candidate code) plants at ncu.csv
        csv = Path(argv[argv.index("--log-file") + 1])
        (csv.symlink_to(secret_file) if "link" in str(kw) else os.mkfifo(csv))
        assert not Path(workdir, "candidate.py").is_symlink()
        return type("Outcome", (), {"log": ""})()

    monkeypatch.setattr(ncu_replay.diag, "ncu_command",
                        lambda names, log: ["ncu", "--log-file", log])
    ref = type("Ref", (), {"init_inputs": [], "state_dict": {}, "init_seed": 1,
                           "resident": False, "inputs": [[torch.ones(2)]]})()
    for kind in ("link", "fifo"):
        monkeypatch.setattr(ncu_replay, "run_sandboxed_command",
                            lambda argv, workdir, _k=kind, **kw: fake_ncu(argv, workdir, kind=_k))
        started = time.monotonic()
        out = ncu_replay.run_ncu_replay(EvaluationConfig(), "problem", "candidate", ref, ["k"], {})
        assert time.monotonic() - started < 10
        assert "error" in out and SECRET not in json.dumps(out)


def test_a_broker_password_never_reaches_the_sandbox_or_a_log(monkeypatch, tmp_path):
    from search_engine.evaluation.sandbox_environment import clean_environment, redact

    url = "redis://:hunter2-broker-pw@broker.internal:6379/0"
    monkeypatch.setenv("CELERY_BROKER_URL", url)         # a name no pattern knows
    monkeypatch.setenv("CC", "amqp://user:cc-pw-123@mq/")  # an allowed name, a secret value
    env = clean_environment(tmp_path)
    assert "hunter2-broker-pw" not in json.dumps(env) and "cc-pw-123" not in json.dumps(env)
    text = redact(f"log {url} and postgres://u:other-pw-9@db/x")
    assert "hunter2-broker-pw" not in text and "other-pw-9" not in text


# -- class 11: hostile replies ---------------------------------------------------------------

def _frame(header: bytes, declared: int | None = None) -> bytes:
    return struct.pack(">Q", len(header) if declared is None else declared) + header


@pytest.mark.parametrize("frame", [
    _frame(b"[" * 100_000 + b"]" * 100_000),                  # deep nesting
    _frame(b'{"a":' * 5000 + b"1" + b"}" * 5000),             # deep objects
    _frame(b"{}", declared=1 << 40),                           # huge
    _frame(b"\xff\xfe garbage"),                               # not JSON
    _frame(b'"a string"'),                                     # wrong type
    _frame(b'{"kind": "reply", "tensors": "no"}'),             # wrong field type
    _frame(b'{"kind": "reply", "tensors": [{"dtype": ["x"], "shape": "y"}]}'),
])
def test_hostile_frames_are_protocol_errors(frame):
    a, b = socket.socketpair()
    try:
        b.sendall(frame)
        b.close()
        with pytest.raises(wire.ProtocolError):
            wire.recv(a, 1 << 20)
    finally:
        a.close()


@pytest.mark.parametrize("mode", ["deep", "huge", "garbage"])
def test_hostile_replies_end_as_protocol_violation(run_eval, mode):
    r = run_eval(runtime_candidate("hostile_reply", **{'MODE = "deep"': f'MODE = "{mode}"'}),
                 static_checks=False)
    assert r.status == "hack_suspected", r.message
    assert "protocol.violation" in flags(r)


def test_a_reply_the_parent_cannot_use_is_a_violation_not_a_crash(run_eval, monkeypatch):
    from search_engine.evaluation.candidate_run import CandidateRun

    def drive(self, session, ref):  # a reply of the right frame but the wrong types
        return {"trials": "not a list", "timing": 7}

    monkeypatch.setattr(CandidateRun, "_drive", drive)
    r = run_eval((CANDIDATES / "clean_softmax.py").read_text())
    assert r.status == "hack_suspected" and "protocol.violation" in flags(r), r.message


def test_the_cli_prints_a_status_whatever_happens(tmp_path):
    """Even an exception nobody expected (here: deep recursion) ends in one JSON status."""
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\n"
        "import search_engine.evaluation.pipeline as p\n"
        "def boom(*a, **k):\n    raise RecursionError('maximum recursion depth exceeded')\n"
        "p.evaluate = boom\n"
        "from search_engine.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    problem = Path(__file__).resolve().parents[3] / "search_engine/problems_library/softmax.py"
    out = subprocess.run([sys.executable, str(script), "evaluate", "--problem", str(problem),
                          "--candidate", str(CANDIDATES / "clean_softmax.py"), "--target",
                          "interpreter", "--json"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    last = json.loads(out.stdout.strip().splitlines()[-1])
    assert last["status"] == "error" and "RecursionError" in last["message"], out.stderr


# -- class 12: the disk --------------------------------------------------------------------

def test_filling_the_workdir_is_stopped_with_a_clear_status(run_eval):
    limits = replace(SandboxLimits(), disk_bytes=32 << 20)
    started = time.monotonic()
    r = run_eval(runtime_candidate("fills_disk"), static_checks=False, limits=limits)
    assert time.monotonic() - started < 120
    assert r.status == "runtime_error", r.message
    assert "disk limit" in r.message


def test_one_file_cannot_outgrow_the_disk_limit(tmp_path):
    from search_engine.evaluation.sandbox import run_sandboxed_command

    code = ("import os\nf = open('big.bin', 'wb')\n"
            "try:\n    f.write(b'x' * (8 << 20))\n    f.flush()\n"
            "except OSError as exc:\n    print('refused:', exc.strerror)\n")
    limits = replace(SandboxLimits(), disk_bytes=1 << 20, isolation="auto")
    out = run_sandboxed_command([sys.executable, "-c", code], tmp_path, timeout_s=60,
                                limits=limits)
    assert "refused: File too large" in out.log, out.log
    assert out.disk_exceeded and (tmp_path / "big.bin").stat().st_size <= 1 << 20
