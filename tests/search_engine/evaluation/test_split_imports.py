"""The evaluator's modules after their split by responsibility: every name still resolves.

Much of the evaluator runs only on a CUDA GPU (resident tensors, gated timing, profiling,
ncu), so a name left behind by a move would fail only there. These checks are static
(imports, free names, attributes and call signatures of the split classes) or drive the
parent's GPU-target path with a scripted sandbox; none needs a GPU.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import os
import subprocess
import symtable
import sys
import textwrap
import types
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "search_engine" / "evaluation"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parents[1]).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_each_module_imports_on_its_own():
    """An import cycle shows only when one particular module is imported first (the child
    sandboxes start at `child` / `reference_child`), so each one goes first once."""
    script = textwrap.dedent(f"""
        import importlib, sys
        for name in {[module_name(p) for p in SOURCES]!r}:
            for loaded in [m for m in sys.modules if m.startswith("search_engine")]:
                del sys.modules[loaded]
            importlib.import_module(name)
    """)
    for entry in ("child", "reference_child"):  # as the sandboxes run them
        script += (f"\nimport runpy\ntry:\n    runpy.run_module('search_engine.evaluation."
                   f"{entry}', run_name='__main__', alter_sys=True)\nexcept SystemExit:\n"
                   f"    pass\n")
    done = subprocess.run([sys.executable, "-c", script, "--help"], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-3000:]


def _function_imports():
    for path in SOURCES:
        for func in ast.walk(ast.parse(path.read_text())):
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(func):
                    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                        for alias in node.names:
                            yield path, node.lineno, node.module, alias.name
                    elif isinstance(node, ast.Import):
                        for alias in node.names:
                            yield path, node.lineno, alias.name, None


def test_imports_inside_functions_resolve():
    """Lazy imports (many on CUDA-only branches) name a module and a name that exist."""
    missing = []
    for path, line, module, name in _function_imports():
        target = importlib.import_module(module)
        if name is not None and not hasattr(target, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{path.name}:{line} from {module} import {name}")
    assert not missing


def _top_level_bindings(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        for sub in [node] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                               ast.ClassDef)) else ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(sub.name)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
            elif isinstance(sub, ast.alias):
                names.add((sub.asname or sub.name).split(".")[0])
            elif isinstance(sub, ast.ExceptHandler) and sub.name:
                names.add(sub.name)
    return names


def _global_reads(table: symtable.SymbolTable):
    for child in table.get_children():
        for symbol in child.get_symbols():
            if symbol.is_referenced() and symbol.is_global():
                yield child.get_name(), child.get_lineno(), symbol.get_name()
        yield from _global_reads(child)


def test_names_functions_read_as_globals_are_bound_in_their_module():
    """A function that moved reads its globals from its new module, on every branch."""
    unbound = []
    for path in SOURCES:
        text = path.read_text()
        bound = _top_level_bindings(ast.parse(text)) | set(dir(builtins)) | {"__file__"}
        for scope, line, name in _global_reads(symtable.symtable(text, str(path), "exec")):
            if name not in bound:
                unbound.append(f"{path.name}:{line} {scope} reads {name}")
    assert not unbound


def _composed_classes():
    """The split classes as they run: each mixin inside the class it is mixed into."""
    from search_engine.evaluation.candidate_run import CandidateRun
    from search_engine.evaluation.child import CandidateServer
    from search_engine.evaluation.reference_child import ReferenceServer
    from search_engine.evaluation.resident import ResidentDrive
    from search_engine.evaluation.sandbox import SandboxSession
    from search_engine.evaluation.sandbox_pool import SandboxPool

    return {"self": [CandidateRun, CandidateServer, ReferenceServer, ResidentDrive,
                     SandboxSession, SandboxPool],
            "run": [(ResidentDrive, CandidateRun)]}


def _own_classes(cls):
    return [k for k in cls.__mro__ if k.__module__.startswith("search_engine")]


def _attribute_uses(cls, var: str):
    """(class, `var.attr` node, the call it is the callee of or None) over cls's MRO; `var`
    is also matched as `self.var` (ResidentDrive keeps its run as `self.run`)."""
    for klass in _own_classes(cls):
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and ast.unparse(node.value) in (var, f"self.{var}"):
                yield klass, node, calls.get(id(node))


def _assigned(cls) -> set[str]:
    names = set()
    for klass, node, _ in _attribute_uses(cls, "self"):
        if isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return names


def test_attributes_the_split_classes_read_exist():
    """A mixin reads its host's attributes: each must be a member or set in some method."""
    classes = _composed_classes()
    pairs = [(cls, cls, "self") for cls in classes["self"]]
    pairs += [(user, host, "run") for user, host in classes["run"]]
    unresolved = []
    for user, host, var in pairs:
        assigned = _assigned(host)
        for klass, node, _ in _attribute_uses(user, var):
            if var == "self" and ast.unparse(node.value) != "self":
                continue
            if isinstance(node.ctx, ast.Load) and node.attr not in assigned \
                    and not hasattr(host, node.attr):
                unresolved.append(f"{klass.__name__}: {var}.{node.attr}")
    assert not unresolved


def test_method_calls_of_the_split_classes_match_the_signatures():
    """`self.m(...)` in a mixin and `run.m(...)` in ResidentDrive bind to the method that
    the MRO finds (arity and keyword names), CUDA-only branches included."""
    classes = _composed_classes()
    pairs = [(cls, cls, "self") for cls in classes["self"]]
    pairs += [(user, host, "run") for user, host in classes["run"]]
    mismatched, bound = [], 0
    for user, host, var in pairs:
        for klass, node, call in _attribute_uses(user, var):
            if call is None or (var == "self" and ast.unparse(node.value) != "self"):
                continue
            member = inspect.getattr_static(host, node.attr, None)
            if isinstance(member, staticmethod):
                member, skip_self = member.__func__, False
            elif inspect.isfunction(member):
                skip_self = True
            else:
                continue
            if any(isinstance(a, ast.Starred) for a in call.args) or \
                    any(k.arg is None for k in call.keywords):
                continue
            args = [None] * (len(call.args) + skip_self)
            try:
                inspect.signature(member).bind(*args, **{k.arg: None for k in call.keywords})
                bound += 1
            except TypeError as exc:
                mismatched.append(f"{klass.__name__}: {ast.unparse(call)[:80]}: {exc}")
    assert not mismatched
    assert bound > 50  # the check found the calls it is about


OLD_PATHS = {  # what callers and tests import from the modules as they were before the split
    "pipeline": ["evaluate", "candidate_pool", "DEFAULT_TIMEOUT_S", "_Run", "_noise",
                 "_random_indices", "_timing_quality"],
    "sandbox": ["SandboxSession", "SandboxOutcome", "SandboxDied",
                "SandboxTimeout", "ProtocolViolation", "make_workdir", "run_sandboxed_command",
                "clean_environment", "network_isolation_available", "redact", "ENV_ALLOWLIST",
                "SECRET_PATTERN", "REPO_ROOT"],
    "child": ["CandidateServer", "OutputRejected", "REQUESTS", "main"],
    "reference_child": ["ReferenceServer", "degenerate_reason", "REQUESTS", "main"],
    "resident": ["ResidentDrive"],
}


@pytest.mark.parametrize("module", sorted(OLD_PATHS))
def test_old_import_paths_still_resolve(module):
    loaded = importlib.import_module(f"search_engine.evaluation.{module}")
    assert [name for name in OLD_PATHS[module] if not hasattr(loaded, name)] == []


def test_old_paths_are_the_objects_the_code_uses():
    """One class, not two: the child's failure report must see what `_call` raises."""
    from search_engine.evaluation import candidate_call, candidate_run, child, pipeline

    assert pipeline._Run is candidate_run.CandidateRun
    assert child.OutputRejected is candidate_call.OutputRejected


# -- the parent's GPU-target path, with a scripted sandbox ---------------------------------

class _ScriptedSandbox:
    """Answers what a run on an H200 target asks: outputs right, timing noisy once."""

    started = True
    ready = {"default_stream": 7}

    def __init__(self, workdir: Path, outputs: list):
        self.workdir, self.outputs = workdir, outputs
        self.kept, self.kinds, self.timings = {}, [], 0

    def close(self):
        return types.SimpleNamespace(isolation={"sandbox": "scripted"}, log="",
                                     memory_exceeded=False)

    close_later = close

    def request(self, kind, header=None, tensors=None, **limits):
        self.kinds.append(kind)
        header = header or {}
        answer = getattr(self, f"on_{kind}", None)
        return answer(header, tensors) if answer else ({"ok": True}, [])

    def _index(self, set_id: int) -> int:
        """The trial a set id stands for (the parent draws the ids; the resident drive's
        are the trials')."""
        ids = getattr(getattr(self, "run", None), "_set_ids", None)
        return ids.index(set_id) if ids else set_id

    def on_call(self, header, tensors):
        import torch

        if header.get("ghost"):  # an ordinary call the parent chose: launches do nothing
            return {"ok": True, "evidence": {"torch_bytes": 0, "dispatch_escapes": {}}}, \
                [torch.zeros_like(self.outputs[0]).float()]
        out = [self.outputs[self._index(int(header["set"]))].float()]
        evidence = {"own_launches": 1, "other_launches": [], "streams": [7], "mutations": [],
                    "aliases": [], "kernel_seconds": 0.0, "kernel_bytes": 0,
                    "torch_in_kernel": {}, "torch_bytes": 0, "host_reads": {},
                    "dispatch_escapes": {}, "spotted": 0}
        if header.get("keep"):
            self.kept[header["keep"]] = out
            return {"ok": True, "evidence": evidence, "kept": header["keep"]}, []
        return {"ok": True, "evidence": evidence}, out

    def on_time(self, header, tensors):
        self.timings += 1
        for s in header["sets"]:
            self.kept[f"time:{s:04d}"] = [self.outputs[self._index(s)].float()]
        stats = {"median_ms": 2.0, "iqr_ms": 0.5 if self.timings == 1 else 0.02, "samples": 40}
        return {"ok": True, "stats": stats, "measured_s": 0.5, "floor_ms": 0.01,
                "last": [{"set": s, "count": 1} for s in header["sets"]]}, []

    def on_sample(self, header, tensors):
        by_numel = {int(n): tensors[i] for n, i in header["index_for_numel"].items()}
        layout, out = [], []
        for name in sorted(self.kept):
            layout.append({"name": name, "count": len(self.kept[name])})
            out += [t.reshape(-1)[by_numel[t.numel()]] for t in self.kept[name]]
        self.kept.clear()
        return {"ok": True, "layout": layout}, out

    def on_profile(self, header, tensors):
        return {"ok": True, "profile_us": {"my_kernel_0d1d": 90.0, "aten::copy_": 10.0}}, []

    def on_evidence(self, header, tensors):
        return {"ok": True, "tampered_timers": [], "own_kernels": ["my_kernel"],
                "own_kernel_symbols": ["my_kernel_0d1d"],
                "default_stream": 7, "kernel_metadata": []}, []


def _reference(torch, outputs):
    return types.SimpleNamespace(
        init_inputs=[], state_dict={}, init_seed=1, output_shapes=[[4, 8]],
        output_bytes=128, resident=False, inputs=[[torch.randn(4, 8)] for _ in outputs],
        ghost_inputs=[torch.randn(4, 8)], schedule=[(11, 1.0, 0.0), (12, 1.0, 0.0)],
        outputs64=[[o] for o in outputs], ghost_outputs64=[torch.randn(4, 8).double()],
        baselines={"eager": {"median_ms": 4.0, "samples": 30},
                   "compile": {"median_ms": 3.0, "samples": 30}},
        output_dtypes=["torch.float32"], input_bytes=256, flops=1000, notes=[],
        reference_method="float64, whole trial")


@pytest.fixture
def h200_run(monkeypatch, softmax_problem):
    """A run on the H200 target whose comparisons stay on the CPU; GPU locks of its own."""
    from search_engine.evaluation import judgement, ncu_replay
    from search_engine.evaluation.candidate_run import CandidateRun
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.hardware import get_target

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "kernelhub-test-split-imports")
    monkeypatch.setattr(CandidateRun, "device", property(lambda self: "cpu"))
    replays = []
    monkeypatch.setattr(judgement.diag, "ncu_available", lambda: True)
    monkeypatch.setattr(ncu_replay, "run_sandboxed_command",  # where `_ncu` looks it up now
                        lambda argv, workdir, **kw: replays.append(argv) or
                        types.SimpleNamespace(log="no ncu here"))
    config = EvaluationConfig(ncu="auto", retime_attempts=2, quiet_wait_s=1.0)
    run = CandidateRun(softmax_problem, "# candidate", get_target("h200"), "strict", 60, config)
    return run, replays


def test_an_h200_target_run_goes_through_every_device_stage(h200_run, tmp_path):
    import torch

    run, replays = h200_run
    outputs = [torch.randn(4, 8, dtype=torch.float64) for _ in range(2)]
    sandbox = _ScriptedSandbox(tmp_path, outputs)
    sandbox.run = run
    pool = types.SimpleNamespace(take=lambda timeout_s: sandbox)
    result = run.sandbox_stage(_reference(torch, outputs), keep_workdir=True, pool=pool)

    assert result.status == "correct", result.message
    assert sandbox.kinds == ["load", "stage", "stage", "stage", "warm", "call", "call", "call",
                             "time", "time", "call", "sample", "profile",
                             "evidence", "exit"]  # the ghost among the calls, retimed once
    assert result.diagnostics["ghost_replay"]["passed"] is False
    assert (result.speedup_vs_eager, result.speedup_vs_compile) == (2.0, 1.5)
    assert result.coverage == pytest.approx(0.9)
    quality = result.diagnostics["timing_quality"]
    assert quality["attempts"] == 2 and quality["quiet"] is True
    assert "gpu_clocks" in result.diagnostics
    assert result.diagnostics["ncu"]["error"].startswith("ncu wrote no report")
    argv = replays[0]
    assert argv[argv.index("-m") + 1:argv.index("-m") + 6] == [
        "search_engine.evaluation.child", "--mode", "ncu", "--device", "cuda"]


def test_the_resident_drive_times_under_the_gate(h200_run, tmp_path):
    import torch

    from search_engine.evaluation.resident import ResidentDrive

    run, _ = h200_run
    run.lock_wait_s = 0.0
    sandbox = _ScriptedSandbox(tmp_path, [torch.randn(4, 8, dtype=torch.float64)])
    drive = ResidentDrive.__new__(ResidentDrive)  # the link to the problem's sandbox: scripted
    drive.run, drive.session, drive.handles, drive.steps = run, sandbox, {0: "t0"}, {}
    drive._call = lambda which, ghost=False: {"ok": True}
    drive._judge = lambda which, part, **kw: ({"distances": [0.0]}, [])
    report = {"trials": [{"streams": [7]}], "timing": {}}
    drive._timed_checks(report)
    assert sandbox.kinds == ["time", "time", "share_kept"]
    assert report["timing_quiet"] is True and report["timing_attempts"] == 2
    assert report["timing"]["candidate"]["iqr_ms"] == 0.02
    assert report["timed_consistency"] == [{"trial": 0, "after_timing": True,
                                            "rel_norm_diff": 0.0}]
