"""Validate an uploaded KernelBench-format problem before anything stores it.

Static checks first (it parses; it defines `Model`, `get_inputs`, `get_init_inputs`), then
the problem is imported in a fresh subprocess with a time limit: `get_init_inputs()`,
`Model(*init)`, `get_inputs()` must run. The child reports the inputs' shapes and dtypes.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")


class ProblemInvalid(ValueError):
    """The problem source is not a usable KernelBench problem; the message says why."""


@dataclass
class ProblemInfo:
    input_shapes: list[list[int]] = field(default_factory=list)
    input_dtypes: list[str] = field(default_factory=list)
    dtype: str = "float32"
    parameter_count: int = 0


_CHILD = r"""
import json, sys, types
import torch
src = open(sys.argv[1]).read()
mod = types.ModuleType("problem")
exec(compile(src, "problem.py", "exec"), mod.__dict__)
init = mod.get_init_inputs()
model = mod.Model(*init)
inputs = mod.get_inputs()
if not isinstance(inputs, (list, tuple)) or not inputs:
    raise TypeError("get_inputs() must return a non-empty list")
tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
if not tensors:
    raise TypeError("get_inputs() returned no tensor")
floats = [t for t in tensors if t.is_floating_point()]
print("@@INFO@@" + json.dumps({
    "input_shapes": [list(t.shape) for t in tensors],
    "input_dtypes": [str(t.dtype).replace("torch.", "") for t in tensors],
    "dtype": str((floats or tensors)[0].dtype).replace("torch.", ""),
    "parameter_count": sum(p.numel() for p in model.parameters()),
}))
"""


def check_problem_static(source: str) -> None:
    if not source.strip():
        raise ProblemInvalid("The problem file is empty.")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ProblemInvalid(f"The problem does not parse: line {exc.lineno}: {exc.msg}") from exc
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    }
    missing = [name for name in REQUIRED_NAMES if name not in defined]
    if missing:
        raise ProblemInvalid(
            "A KernelBench problem defines class Model(nn.Module), get_inputs() and "
            f"get_init_inputs(); this one lacks: {', '.join(missing)}."
        )


def check_problem(source: str, timeout_s: float = 30.0) -> ProblemInfo:
    """Validate statically and by running it in a subprocess; raise ProblemInvalid."""
    check_problem_static(source)
    with tempfile.TemporaryDirectory(prefix="kh-problem-") as workdir:
        path = os.path.join(workdir, "problem.py")
        with open(path, "w") as handle:
            handle.write(source)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": workdir, "PYTHONPATH": "",
               "CUDA_VISIBLE_DEVICES": ""}
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _CHILD, path], cwd=workdir, env=env,
                capture_output=True, text=True, timeout=timeout_s,
            )
        except subprocess.TimeoutExpired as exc:
            raise ProblemInvalid(
                f"Importing the problem and calling get_inputs() took over {timeout_s:.0f} s."
            ) from exc
    for line in proc.stdout.splitlines():
        if line.startswith("@@INFO@@"):
            return ProblemInfo(**json.loads(line[len("@@INFO@@"):]))
    error = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    raise ProblemInvalid(f"Running the problem failed: {error}")
