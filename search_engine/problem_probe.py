"""Run an uploaded problem's code in the sandbox and bring back only a JSON answer.

Uploaded problem code is untrusted: it may read files, open sockets, fork, loop or allocate
without end. Nothing in the web server, the workers or the search executes it. Whatever needs
to run it (validation on upload, the offline synthesizer's torch.fx analysis) runs this
module in a fresh sandbox (`search_engine.evaluation.isolation.run_sandboxed`: its own
namespaces, only the work dir writable, no network, a time and a memory limit):

    python -m search_engine.problem_probe --problem problem.py --task validate|analyze \
        --result result.json

The child writes one JSON line to the result file in its work dir:

- ``validate``: ``{"probe": 1, "task": "validate", "ok": true, "info": {input_shapes,
  input_dtypes, dtype, parameter_count}}``;
- ``analyze``: ``{"probe": 1, "task": "analyze", "ok": true, "covered": true, "analysis":
  {...}, "materialized_bytes": 0}`` (the op graph traced by the offline synthesizer's
  frontend and classified by its plan, see `synthesis.offline.frontend.json_io`; traced on
  meta tensors, so the bytes of real tensor data it held are 0 for any problem size) or ``"covered": false, "message": ...,
  "ops": [...]``;
- a failure of the problem's own code: ``"ok": false, "error": {"type", "message"}``.

The parent (`run_probe`) treats the file as hostile too: size-capped, no symlinks, parsed
strictly; anything else is a `ProbeFailed` with a message a user can read. Callers validate
the payload's fields (`check_problem`, `analysis_from_json`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROBE_VERSION = 1
TASKS = ("validate", "analyze")
PROBLEM_NAME = "problem.py"
RESULT_NAME = "result.json"
MAX_RESULT_BYTES = 4 << 20
DEFAULT_MEMORY_BYTES = 4 << 30
MAX_MESSAGE_CHARS = 2000
REPO_ROOT = str(Path(__file__).resolve().parents[1])


class ProbeFailed(RuntimeError):
    """The sandboxed probe gave no usable answer. `kind`: timeout, memory, crashed,
    malformed or unavailable; the message is meant for the user."""

    def __init__(self, kind: str, message: str, output: str = ""):
        super().__init__(message)
        self.kind = kind
        self.output = output


@dataclass
class ProbeAnswer:
    payload: dict[str, Any]
    wall_s: float
    isolation: dict[str, Any] = field(default_factory=dict)


# --- parent side ------------------------------------------------------------------------------

def run_probe(source: str, task: str, *, timeout_s: float,
              memory_bytes: int = DEFAULT_MEMORY_BYTES) -> ProbeAnswer:
    """Run `task` on `source` in a fresh sandbox; the child's JSON answer (envelope checked)."""
    if task not in TASKS:
        raise ValueError(f"unknown probe task {task!r}")
    workdir = Path(tempfile.mkdtemp(prefix="kh-probe-"))
    try:
        (workdir / PROBLEM_NAME).write_text(source)
        argv = [sys.executable, "-m", "search_engine.problem_probe", "--problem", PROBLEM_NAME,
                "--task", task, "--result", RESULT_NAME]
        run = _run_sandboxed(argv, workdir, timeout_s=timeout_s, memory_bytes=memory_bytes)
        isolation = dict(getattr(run, "isolation", {}) or {})
        output = str(getattr(run, "output", "") or "")[-MAX_MESSAGE_CHARS:]
        if getattr(run, "timed_out", False):
            raise ProbeFailed("timeout", f"took over {timeout_s:.0f} s", output)
        if getattr(run, "memory_exceeded", False):
            raise ProbeFailed("memory", f"used more than {_gib(memory_bytes)} of memory", output)
        raw = _read_result(workdir / RESULT_NAME)
        if raw is None:
            raise ProbeFailed("crashed", "the problem's process ended without an answer "
                              f"(exit status {getattr(run, 'returncode', '?')})"
                              + (f": {_last_line(output)}" if output.strip() else ""), output)
        payload = parse_answer(raw, task)
        return ProbeAnswer(payload, float(getattr(run, "wall_s", 0.0) or 0.0), isolation)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def parse_answer(raw: bytes, task: str) -> dict[str, Any]:
    """The child's answer as a dict, or ProbeFailed("malformed"): one JSON object, our
    version and task, `ok` a bool, an error with a string message."""
    try:
        text = raw.decode("utf-8").strip()
        if "\n" in text:
            raise ValueError("more than one line")
        payload = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProbeFailed("malformed", f"the sandbox's answer is not valid JSON "
                          f"({type(exc).__name__})") from None
    if not isinstance(payload, dict) or payload.get("probe") != PROBE_VERSION \
            or payload.get("task") != task or not isinstance(payload.get("ok"), bool):
        raise ProbeFailed("malformed", "the sandbox's answer is not a probe result")
    if not payload["ok"]:
        error = payload.get("error")
        if not isinstance(error, dict) or not isinstance(error.get("message"), str) \
                or not isinstance(error.get("type", ""), str):
            raise ProbeFailed("malformed", "the sandbox's error answer is malformed")
    return payload


def error_text(payload: dict[str, Any]) -> str:
    """The problem's own failure, from an ``ok: false`` answer, as one short line."""
    error = payload["error"]
    kind = str(error.get("type") or "Error")[:80]
    message = " ".join(str(error["message"]).split())[:MAX_MESSAGE_CHARS]
    return f"{kind}: {message}" if message else kind


def _read_result(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ProbeFailed("malformed", "the sandbox's answer is not a regular file")
        if info.st_size > MAX_RESULT_BYTES:
            raise ProbeFailed("malformed", f"the sandbox's answer is larger than "
                              f"{MAX_RESULT_BYTES >> 20} MiB")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_RESULT_BYTES + 1)
    finally:
        os.close(fd)


def _probe_env(workdir: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(workdir),
        "TMPDIR": str(workdir),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONHASHSEED": "0",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "TRITON_INTERPRET": "1",
        "PYTHONPATH": REPO_ROOT,  # the sandbox binds search_engine/ read-only at its path
    }


def probe_limits(memory_bytes: int):
    """SandboxLimits for a probe: the candidates' defaults (the same sandbox) with the
    probe's memory limit."""
    from search_engine.evaluation.config import SandboxLimits

    return SandboxLimits(memory_bytes=memory_bytes)


def _run_sandboxed(argv: list[str], workdir: Path, *, timeout_s: float, memory_bytes: int):
    try:
        from search_engine.evaluation.isolation import run_sandboxed

        return run_sandboxed(argv, workdir, timeout_s=timeout_s,
                             limits=probe_limits(memory_bytes), env=_probe_env(workdir),
                             gpu=False)
    except Exception as exc:  # no sandbox here (IsolationUnavailable, ...): never run it bare
        raise ProbeFailed("unavailable", f"could not start the sandbox: "
                          f"{type(exc).__name__}: {exc}") from exc


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.3g} GiB"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:500] if lines else ""


# --- child side (runs inside the sandbox only) ------------------------------------------------

def _load_problem(path: str):
    import types

    source = Path(path).read_text()
    module = types.ModuleType("kernelhub_problem")
    module.__file__ = os.path.abspath(path)
    sys.modules["kernelhub_problem"] = module
    exec(compile(source, PROBLEM_NAME, "exec"), module.__dict__)  # noqa: S102 (sandboxed)
    return module


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _validate(module) -> dict[str, Any]:
    import torch

    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise TypeError(f"the problem does not define {name}")
    model, inputs = _built_and_run(module)
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    floats = [t for t in tensors if t.is_floating_point()]
    parameters = model.parameters() if isinstance(model, torch.nn.Module) else []
    return {
        "input_shapes": [list(t.shape) for t in tensors],
        "input_dtypes": [_dtype_name(t.dtype) for t in tensors],
        "dtype": _dtype_name((floats or tensors)[0].dtype),
        "parameter_count": int(sum(p.numel() for p in parameters)),
    }


def _built_and_run(module) -> tuple[Any, Any]:
    """The model and its inputs, after one forward: a problem whose forward raises cannot be
    a reference.

    First on meta tensors (no data, no memory and no time at any size: KernelBench's
    official sizes are far over the probe's memory limit, and a forward that always raises
    or mismatches its shapes fails there too; inputs sized by a value are built for real and
    only their shapes kept, as the analysis does). Only when that fails is everything built
    and run for real, so a refusal is always the problem's own error on its own inputs,
    never a meta-device gap."""
    import torch

    from search_engine.synthesis.offline.frontend.trace import inputs_on_meta, on_meta

    with torch.no_grad():
        try:
            inputs = _checked_inputs(inputs_on_meta(module))  # the analysis's rule
            with on_meta():  # built without memory, whatever its size
                model = module.Model(*module.get_init_inputs())
                model(*inputs)
            return model, inputs
        except Exception:  # noqa: BLE001: confirmed (or not) by the real run below
            pass
        model = module.Model(*module.get_init_inputs())
        inputs = _checked_inputs(module.get_inputs())
        try:
            model(*inputs)
        except Exception as exc:
            raise RuntimeError(f"Model(...).forward(*get_inputs()) raised {type(exc).__name__}: "
                               f"{exc}; a reference must run on its own inputs") from exc
    return model, inputs


def _checked_inputs(inputs):
    """get_inputs()'s answer, if it is a non-empty list holding a tensor; else TypeError."""
    import torch

    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("get_inputs() must return a non-empty list")
    if not any(isinstance(x, torch.Tensor) for x in inputs):
        raise TypeError("get_inputs() returned no tensor")
    return inputs


def _analyze(module) -> dict[str, Any]:
    from search_engine.synthesis.base import NotCoveredError
    from search_engine.synthesis.offline.frontend.json_io import analysis_to_json
    from search_engine.synthesis.offline.frontend.trace import trace_module
    from search_engine.synthesis.offline.plan.classify import classified

    try:
        analysis = classified(trace_module(module))
    except NotCoveredError as exc:
        text = str(exc)
        suffix = f" (stopped by ops: {', '.join(exc.ops)})" if exc.ops else ""
        message = text[: -len(suffix)] if suffix and text.endswith(suffix) else text
        return {"covered": False, "message": message, "ops": list(exc.ops)}
    return {"covered": True, "analysis": analysis_to_json(analysis),
            "materialized_bytes": int(analysis.materialized_bytes),
            "batch_analyses": _batch_analyses(module, analysis)}


def _batch_analyses(module, analysis) -> list[dict[str, Any]]:
    """The op graph traced again at other batch sizes (meta device, cheap), so the
    synthesizer can tell which generated sizes follow the batch; [] when the problem has no
    batch or does not trace at another one (its kernels then stay at its own shape)."""
    from search_engine.batch_shapes import traced_batches
    from search_engine.synthesis.offline.frontend.json_io import analysis_to_json
    from search_engine.synthesis.offline.frontend.trace import trace_module
    from search_engine.synthesis.offline.plan.classify import classified

    inputs = sorted((n for n in analysis.nodes.values() if n.op == "input"),
                    key=lambda n: n.attrs.get("index", 0))
    batch = next((n.shape[0] for n in inputs if len(n.shape) >= 1), None)
    if not batch:
        return []
    out = []
    for other in traced_batches(int(batch)):
        try:
            out.append({"batch": other,
                        "analysis": analysis_to_json(classified(trace_module(module, batch=other)))})
        except Exception:  # noqa: BLE001 - the batch is baked into the problem: no variant
            return []
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m search_engine.problem_probe")
    parser.add_argument("--problem", required=True)
    parser.add_argument("--task", required=True, choices=TASKS)
    parser.add_argument("--result", default=RESULT_NAME)
    args = parser.parse_args(argv)
    answer: dict[str, Any] = {"probe": PROBE_VERSION, "task": args.task}
    try:
        import torch

        torch.manual_seed(0)
        module = _load_problem(args.problem)
        body = _validate(module) if args.task == "validate" else None
        answer |= {"ok": True, "info": body} if body is not None else \
            {"ok": True, **_analyze(module)}
    except BaseException as exc:  # noqa: BLE001: the problem's failure is the answer
        traceback.print_exc()
        answer = {"probe": PROBE_VERSION, "task": args.task, "ok": False,
                  "error": {"type": type(exc).__name__, "message": str(exc)[:MAX_MESSAGE_CHARS]}}
    try:
        text = json.dumps(answer)
    except (TypeError, ValueError) as exc:
        text = json.dumps({"probe": PROBE_VERSION, "task": args.task, "ok": False,
                           "error": {"type": "ProbeError", "message": f"unserializable: {exc}"}})
    with open(args.result, "w") as handle:
        handle.write(text + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip atexit hooks and threads the problem may have left


if __name__ == "__main__":
    main()
