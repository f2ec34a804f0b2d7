"""KernelBench-format problems: `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()`
and module-level sizes.

A `Problem` holds the source text (the single truth: it travels to sandboxes and workers),
plus a guessed operator family and dtype used by diagnostics, retrieval and tolerances.
"""

from __future__ import annotations

import ast
import hashlib
import re
import sys
import threading
import types
from dataclasses import dataclass, field, replace
from pathlib import Path

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")

# Ordered: the first family whose pattern matches the source wins.
FAMILY_PATTERNS: list[tuple[str, str]] = [
    ("attention", r"scaled_dot_product_attention|attention|\bqkv\b"),
    ("convolution", r"\bconv[123]d\b|Conv[123]d|conv_transpose"),
    ("gemm", r"\bmatmul\b|\bmm\(|\bbmm\b|\baddmm\b|nn\.Linear|F\.linear|@"),
    ("normalization", r"layer_norm|LayerNorm|batch_norm|BatchNorm|group_norm|GroupNorm|rms_norm|RMSNorm"),
    ("softmax", r"softmax"),
    ("reduction", r"\.sum\(|\.mean\(|\.amax\(|\.max\(|\.min\(|\.prod\(|cumsum|argmax|argmin"),
    ("elementwise", r"relu|gelu|sigmoid|tanh|\bexp\(|\+|\*"),
]

DTYPE_PATTERNS: list[tuple[str, str]] = [
    ("bfloat16", r"bfloat16|\.bf16\b|\.bfloat16\(\)"),
    ("float16", r"float16|\.half\(\)"),
    ("float64", r"float64|\.double\(\)"),
]


class ProblemError(ValueError):
    """The problem file is not a usable KernelBench problem; the message says why."""


@dataclass(frozen=True)
class Problem:
    name: str
    source: str
    family: str = "other"
    dtype: str = "float32"
    path: str | None = None
    sizes: dict[str, int | float] = field(default_factory=dict, compare=False)

    @classmethod
    def from_source(cls, source: str, name: str = "problem", path: str | None = None) -> Problem:
        validate_problem_source(source)
        return cls(
            name=name, source=source, family=guess_family(source), dtype=guess_dtype(source),
            path=path, sizes=module_level_sizes(source),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> Problem:
        path = Path(path)
        try:
            source = path.read_text()
        except OSError as exc:
            raise ProblemError(f"cannot read problem file {path}: {exc.strerror or exc}") from exc
        return cls.from_source(source, name=path.stem, path=str(path))

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def with_sizes(self, **overrides: float) -> Problem:
        """A copy whose module-level size constants are replaced (e.g. GPU-sized runs)."""
        if not overrides:
            return self
        source = rewrite_module_constants(self.source, overrides)
        return replace(self, source=source, sizes=module_level_sizes(source))


def load_problem(problem: Problem | str | Path, name: str = "problem") -> Problem:
    """Accept a Problem, a path to a .py file, or source text."""
    if isinstance(problem, Problem):
        return problem
    if isinstance(problem, Path) or (isinstance(problem, str) and "\n" not in problem
                                     and problem.endswith(".py")):
        return Problem.from_file(problem)
    return Problem.from_source(str(problem), name=name)


def validate_problem_source(source: str) -> None:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ProblemError(f"problem source does not parse: line {exc.lineno}: {exc.msg}") from exc
    defined = {
        node.name for node in tree.body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    } | {
        t.id for node in tree.body if isinstance(node, ast.Assign)
        for t in node.targets if isinstance(t, ast.Name)
    }
    missing = [n for n in REQUIRED_NAMES if n not in defined]
    if missing:
        raise ProblemError(
            "not a KernelBench problem: missing " + ", ".join(missing)
            + " (needs class Model(nn.Module), get_inputs() and get_init_inputs())"
        )


def guess_family(source: str) -> str:
    body = _model_source(source)
    for family, pattern in FAMILY_PATTERNS:
        if re.search(pattern, body):
            return family
    return "other"


def guess_dtype(source: str) -> str:
    for dtype, pattern in DTYPE_PATTERNS:
        if re.search(pattern, source):
            return dtype
    return "float32"


def _model_source(source: str) -> str:
    """The text of `class Model` (family patterns should not match get_inputs' arithmetic)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            return ast.get_source_segment(source, node) or source
    return source


def module_level_sizes(source: str) -> dict[str, int | float]:
    """Module-level `NAME = <number>` assignments (KernelBench's size constants)."""
    sizes: dict[str, int | float] = {}
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, (int, float))
                and not isinstance(node.value.value, bool)):
            sizes[node.targets[0].id] = node.value.value
    return sizes


def rewrite_module_constants(source: str, overrides: dict[str, int | float]) -> str:
    known = module_level_sizes(source)
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise ProblemError(
            f"cannot override {', '.join(unknown)}: the problem's module-level sizes are "
            + (", ".join(f"{k}={v}" for k, v in known.items()) or "none")
        )
    lines = source.splitlines(keepends=True)
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in overrides):
            row = node.lineno - 1
            if node.end_lineno != node.lineno:
                raise ProblemError(f"size {node.targets[0].id} spans several lines; edit it by hand")
            line = lines[row]
            head = line[: node.value.col_offset]
            tail = line[node.value.end_col_offset:]
            lines[row] = f"{head}{overrides[node.targets[0].id]!r}{tail}"
    return "".join(lines)


def exec_module(source: str, module_name: str, filename: str) -> types.ModuleType:
    """Execute source as a real module whose code objects point at `filename`.

    Triton reads kernel source through `inspect`, so the file must exist on disk and the
    module must be registered in sys.modules.
    """
    module = types.ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module
    code = compile(source, filename, "exec")
    exec(code, module.__dict__)
    return module


# torch's default generator is process-global: code in this process that seeds it and then
# draws (references, the offline synthesizer's tracing) holds this lock, so a thread
# drawing at the same time cannot shift another's random stream.
TORCH_RNG_LOCK = threading.RLock()


def make_trial_inputs(module: types.ModuleType, seed: int, scale: float, shift: float) -> list:
    """One correctness trial's inputs: `get_inputs()` under `seed`, floating tensors scaled
    and shifted (called in the problem's sandbox only)."""
    import torch

    torch.manual_seed(seed)
    inputs = list(module.get_inputs())
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and (scale != 1.0 or shift):
            x = (x.double() * scale + shift).to(x.dtype)
        out.append(x)
    return out
