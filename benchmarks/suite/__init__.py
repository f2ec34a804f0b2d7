"""The GPU benchmark suite: KernelBench-format problems written for this project.

Each `l<level>_<number>_<op>_<dtype>.py` is a self-contained problem (`Model`, `get_inputs`,
`get_init_inputs`, module-level sizes at KernelBench's current official shape) that
`python -m search_engine optimize --problem FILE` takes as it is, plus metadata the runner
(`python -m benchmarks run`) reads:

- ``FAMILY``: the runner's group; one family fits one 10-minute GPU call (``--families``);
- ``DTYPE``: the torch dtype of the inputs and parameters;
- ``MIN_BYTES``: bytes any implementation must move (each input read once, each output
  written once), computed from the sizes;
- ``MIN_FLOPS``: matmul / convolution FLOPs (2·M·N·K); 0 where pointwise arithmetic is never
  the bound, so the floor is the copy time;
- ``TINY_SIZES``: the sizes for ``--scale tiny`` (CPU tests under the Triton interpreter).

Scaling rewrites the size constants in the source (`Problem.with_sizes`), so the search, its
sandboxes and the runner all run the same tiny text, and MIN_* follow from the new sizes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

SUITE_DIR = Path(__file__).resolve().parent
SCALES = ("official", "tiny")
METADATA = ("FAMILY", "DTYPE", "MIN_BYTES", "MIN_FLOPS", "TINY_SIZES")


class SuiteError(ValueError):
    """A suite file or a selection is unusable; the message says which and why."""


@dataclass(frozen=True)
class SuiteProblem:
    name: str
    path: Path
    source: str  # at the chosen scale
    family: str
    dtype: str  # "float32", "bfloat16", "float16"
    min_bytes: int
    min_flops: int

    @cached_property
    def problem(self):
        """The search engine's `Problem` for this source."""
        from search_engine.problems import Problem

        return Problem.from_source(self.source, name=self.name, path=str(self.path))

    def module(self):
        """The problem executed as a module (the runner's own baselines)."""
        from search_engine.problems import exec_module

        return exec_module(self.source, f"benchmarks_suite_{self.name}", str(self.path))


def load_suite(scale: str = "official", directory: Path = SUITE_DIR) -> list[SuiteProblem]:
    """Every problem file of `directory` at `scale`, sorted by name."""
    if scale not in SCALES:
        raise SuiteError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    files = sorted(p for p in Path(directory).glob("*.py") if not p.name.startswith("_"))
    if not files:
        raise SuiteError(f"no problem files (*.py) in {directory}")
    return [load_problem_file(path, scale) for path in files]


def load_problem_file(path: Path, scale: str = "official") -> SuiteProblem:
    from search_engine.problems import ProblemError, exec_module, rewrite_module_constants

    source = path.read_text()
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise SuiteError(f"{path}: does not parse: line {exc.lineno}: {exc.msg}") from None
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    missing = [name for name in METADATA if name not in assigned]
    if missing:
        raise SuiteError(f"{path}: missing suite metadata {', '.join(missing)} "
                         f"(see benchmarks/suite/__init__.py)")
    if scale == "tiny":
        try:
            source = rewrite_module_constants(source, _literal(tree, "TINY_SIZES", path))
        except ProblemError as exc:
            raise SuiteError(f"{path}: TINY_SIZES: {exc}") from None
    # Module top levels only define things (tensors are made in get_inputs), so this is cheap.
    module = exec_module(source, f"benchmarks_suite_meta_{path.stem}", str(path))
    return SuiteProblem(
        name=path.stem, path=path, source=source, family=str(module.FAMILY),
        dtype=str(module.DTYPE).replace("torch.", ""), min_bytes=int(module.MIN_BYTES),
        min_flops=int(module.MIN_FLOPS))


def _literal(tree: ast.Module, name: str, path: Path):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                raise SuiteError(f"{path}: {name} must be a literal dict") from None
    raise SuiteError(f"{path}: missing {name}")


def families(problems: list[SuiteProblem]) -> dict[str, list[str]]:
    """family -> problem names, in suite order."""
    out: dict[str, list[str]] = {}
    for p in problems:
        out.setdefault(p.family, []).append(p.name)
    return out


def select(problems: list[SuiteProblem], family_names: list[str] | None = None,
           problem_names: list[str] | None = None) -> list[SuiteProblem]:
    """The problems in any of `family_names` and/or named in `problem_names` (all when both
    are empty); unknown names are an error that lists the known ones."""
    known_families = families(problems)
    known_names = [p.name for p in problems]
    for name in family_names or []:
        if name not in known_families:
            raise SuiteError(f"unknown family {name!r}; known: {', '.join(known_families)}")
    for name in problem_names or []:
        if name not in known_names:
            raise SuiteError(f"unknown problem {name!r}; known: {', '.join(known_names)}")
    if not family_names and not problem_names:
        return list(problems)
    wanted_families, wanted_names = set(family_names or []), set(problem_names or [])
    return [p for p in problems if p.family in wanted_families or p.name in wanted_names]
