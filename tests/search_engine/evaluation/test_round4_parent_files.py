"""Round 4, bug 1: the parent writes nothing by a name the sandbox could have prepared.

A screening lane runs many configurations in ONE sandbox, so each configuration's workdir
is one the configurations before it could write: a link planted at the name the parent
wrote the next source to made the parent write it to a host path; a FIFO there hung the
parent. The parent now writes every source it hands the sandbox through `write_private`
(a fresh directory of its own, reached by descriptors, O_EXCL | O_NOFOLLOW | O_NONBLOCK),
and a configuration that planted links or special files fails. These tests plant links and
FIFOs where the parent used to write and assert no host file was written, nothing hung, and
a clear status came back.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from search_engine.evaluation.isolation.untrusted_files import UntrustedFileError, write_private

from .conftest import CANDIDATES

ROUND4 = CANDIDATES / "round4"
SECRET = "kernelhub-round4-host-file"
SOURCE = "class ModelNew: pass  # config 1's source\n"


@pytest.fixture
def host_file(tmp_path) -> Path:
    path = tmp_path / "host" / "precious.py"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


@pytest.fixture
def workdir(tmp_path) -> Path:
    path = tmp_path / "workdir"
    path.mkdir()
    return path


def plant(workdir: Path, host_file: Path, missing: Path) -> None:
    """What a hostile configuration does to the next ones' names."""
    (workdir / "config_0001.py").symlink_to(host_file)       # an existing host file
    (workdir / "config_0002.py").symlink_to(missing)         # a host path not there yet
    os.mkfifo(workdir / "config_0003.py")                    # an open that never returns
    (workdir / "candidate.py").symlink_to(host_file)
    os.mkfifo(workdir / "config_0004.py", 0o600)


def call_with_deadline(fn, seconds: float = 20.0):
    """`fn()` on a daemon thread: a hang fails the test instead of hanging the suite."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the parent hung for {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


# -- the helper -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["config_0001.py", "config_0002.py", "config_0003.py",
                                  "candidate.py", "config_0004.py"])
def test_write_private_never_follows_or_opens_a_planted_name(workdir, host_file, tmp_path,
                                                             name):
    missing = tmp_path / "host" / "created_by_parent.py"
    plant(workdir, host_file, missing)
    started = time.monotonic()
    path = Path(call_with_deadline(lambda: write_private(workdir, name, SOURCE.encode())))
    assert time.monotonic() - started < 10
    assert host_file.read_text() == SECRET and not missing.exists()  # no host write
    assert path.read_text() == SOURCE and path.name == name
    assert path.parent.parent == workdir and path.parent.name.startswith("parent-")
    # the planted names are left alone, neither followed nor replaced
    assert (workdir / "config_0001.py").is_symlink()
    assert stat.S_ISFIFO(os.lstat(workdir / "config_0003.py").st_mode)


def test_write_private_makes_a_fresh_directory_only_the_parent_can_write(workdir):
    first = Path(write_private(workdir, "config_0000.py", b"a"))
    second = Path(write_private(workdir, "config_0000.py", b"b"))
    assert first.parent != second.parent  # unguessable and never reused
    assert first.read_bytes() == b"a" and second.read_bytes() == b"b"
    info = os.lstat(second.parent)
    assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o755
    assert stat.S_IMODE(os.lstat(second).st_mode) == 0o644  # readable by the sandbox's user


def test_write_private_refuses_a_workdir_swapped_for_a_link(tmp_path, host_file):
    swapped = tmp_path / "swapped"
    swapped.symlink_to(host_file.parent)
    with pytest.raises(UntrustedFileError):
        write_private(swapped, "config_0001.py", SOURCE.encode())
    assert sorted(p.name for p in host_file.parent.iterdir()) == ["precious.py"]
    with pytest.raises(ValueError):
        write_private(tmp_path, "../escape.py", b"x")


# -- the screening lane, without a sandbox ------------------------------------------------

def lane_and_run(workdir: Path, index: int = 1):
    """A lane over a stand-in session (its workdir only) and one configuration; `_screen`
    (the sandbox conversation) is replaced by a read of the file the lane wrote."""
    from search_engine.evaluation.screening import ScreenedConfiguration, ScreenRun, _Lane

    run = ScreenRun.__new__(ScreenRun)
    run.index, run.candidate, run.timeout_s = index, SOURCE, 30.0
    lane = _Lane.__new__(_Lane)
    lane.ref, lane.error, lane.spoiled, lane.phases, lane.resident = None, "", False, {}, None
    lane.session = SimpleNamespace(workdir=workdir, renew=lambda timeout_s: None)
    seen: list[Path] = []

    def fake_screen(run, session, path):
        seen.append(path)
        assert path.read_text() == SOURCE
        return ScreenedConfiguration(run.index, True, "passed the spot-check", 1.0)

    lane._screen = fake_screen
    return lane, run, seen


def test_the_lane_writes_the_next_source_past_a_planted_link_and_fifo(workdir, host_file,
                                                                      tmp_path):
    missing = tmp_path / "host" / "created_by_parent.py"
    for index in (1, 2, 3, 4):
        for name in list(os.listdir(workdir)):
            p = workdir / name
            p.unlink() if not p.is_dir() or p.is_symlink() else None
        plant(workdir, host_file, missing)
        lane, run, seen = lane_and_run(workdir, index)
        screened = call_with_deadline(lambda: lane.screen(run))
        assert host_file.read_text() == SECRET and not missing.exists()
        assert seen and seen[0] != workdir / f"config_{index:04d}.py"
        assert seen[0].name == f"config_{index:04d}.py" and seen[0].parent.parent == workdir
        # the plants are still there after the configuration: it is failed, its lane ended
        assert not screened.passed and screened.reason.startswith("hack_suspected: ")
        assert "config_0001.py -> " in screened.reason and "(FIFO)" in screened.reason
        assert lane.spoiled


def test_a_clean_workdir_screens_normally(workdir):
    lane, run, seen = lane_and_run(workdir)
    screened = call_with_deadline(lambda: lane.screen(run))
    assert screened.passed and not lane.spoiled and len(seen) == 1


def test_a_lane_whose_workdir_cannot_be_written_safely_fails_that_configuration(tmp_path,
                                                                                 host_file):
    swapped = tmp_path / "swapped"
    swapped.symlink_to(host_file.parent)
    lane, run, seen = lane_and_run(swapped)
    screened = call_with_deadline(lambda: lane.screen(run))
    assert not seen and not screened.passed and lane.spoiled
    assert screened.reason.startswith("hack_suspected: the screening sandbox tampered")
    assert sorted(p.name for p in host_file.parent.iterdir()) == ["precious.py"]


def test_planted_lists_without_opening(workdir, host_file, tmp_path):
    from search_engine.evaluation.screening import _planted

    assert _planted(workdir) == ""
    (workdir / "ok.py").write_text("x")
    (workdir / "tmp").mkdir()
    assert _planted(workdir) == ""
    plant(workdir, host_file, tmp_path / "nowhere")
    started = time.monotonic()
    found = call_with_deadline(lambda: _planted(workdir))
    assert time.monotonic() - started < 5
    assert f"config_0001.py -> {host_file}" in found and "config_0003.py (FIFO)" in found


def test_closing_a_lane_removes_its_workdir_without_following_links(workdir, host_file,
                                                                     tmp_path):
    """The other parent-side touch of the workdir: its removal unlinks links and FIFOs,
    never what they point at (shutil's descriptor-based rmtree), and never blocks."""
    import shutil

    assert shutil.rmtree.avoids_symlink_attacks
    plant(workdir, host_file, tmp_path / "nowhere")
    (workdir / "tmp").mkdir()
    (workdir / "tmp" / "hostdir").symlink_to(host_file.parent, target_is_directory=True)
    lane, _, _ = lane_and_run(workdir)
    closed = []
    lane.session.close = lambda: closed.append(True)
    call_with_deadline(lane.close)
    assert closed and not workdir.exists()
    assert host_file.read_text() == SECRET and sorted(os.listdir(host_file.parent)) == [
        "precious.py"]


# -- the candidate's own run (evaluate) ---------------------------------------------------

def test_evaluate_writes_the_candidate_past_a_planted_link(workdir, host_file, monkeypatch):
    """A pool's sandbox is started before the candidate is written: whatever it left at
    `candidate.py` is neither followed nor opened."""
    from search_engine.evaluation.candidate_run import CandidateRun

    plant(workdir, host_file, workdir.parent / "nowhere")
    run = CandidateRun.__new__(CandidateRun)
    run.candidate = SOURCE
    run._ref = SimpleNamespace(baselines={})
    run.result = lambda status, message, **fields: SimpleNamespace(status=status,
                                                                   message=message)
    session = SimpleNamespace(workdir=workdir, started=True)
    loaded: list[str] = []

    def fake_load(session, ref, candidate_file):
        loaded.append(candidate_file)
        return {"ok": False, "error": "compile", "message": "stop here"}

    monkeypatch.setattr(run, "_load", fake_load, raising=False)
    monkeypatch.setattr(CandidateRun, "_output_cap", staticmethod(lambda ref: 0))
    result = call_with_deadline(lambda: run._drive(session, run._ref))
    assert result.status == "compile_error"
    assert host_file.read_text() == SECRET
    assert Path(loaded[0]).read_text() == SOURCE and Path(loaded[0]).parent.parent == workdir
    assert (workdir / "candidate.py").is_symlink()  # left alone


# -- end to end: screening with the interpreter -------------------------------------------

@pytest.fixture(scope="module")
def tiny_softmax():
    from search_engine.problems_library import library_problem

    return library_problem("softmax", scale="small").with_sizes(batch_size=4, dim=32)


def test_screening_a_planting_configuration_writes_no_host_file_and_returns(tiny_softmax,
                                                                           tmp_path):
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.screening import screen

    from .conftest import candidate

    host_target = tmp_path / "host_target.py"  # config 1's source must never land here
    planter = (ROUND4 / "parent_plants_next_config.py").read_text().replace(
        'HOST_TARGET = ""', f"HOST_TARGET = {str(host_target)!r}")
    clean = candidate("clean_softmax")
    started = time.monotonic()
    result = screen(tiny_softmax, [planter, clean + "\n# config 1\n", clean + "\n# config 2\n"],
                    target="interpreter", timeout_s=60, workers=1,
                    config=EvaluationConfig(ncu="off", static_checks=False))
    assert time.monotonic() - started < 150
    assert not host_target.exists() and not os.path.lexists(host_target)
    planted, first, second = result.configurations
    assert not planted.passed and planted.reason.startswith("hack_suspected: "), planted.reason
    assert "config_0001.py -> " in planted.reason and "config_0002.py (FIFO)" in planted.reason
    assert first.passed, first.reason  # screened after it, in a fresh sandbox
    assert second.passed, second.reason
    assert result.sandboxes == 1
