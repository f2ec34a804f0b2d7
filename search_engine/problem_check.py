"""Validate an uploaded KernelBench-format problem before anything stores it.

Static checks first, in this process and without running anything (it parses; it defines
`Model`, `get_inputs`, `get_init_inputs`). Then the problem runs in the sandbox
(`search_engine.problem_probe --task validate`: no network, only its work dir writable, a
time and a memory limit): `get_init_inputs()`, `Model(*init)`, `get_inputs()` and the
forward on those inputs must run (a reference that raises is no reference). The
sandbox reports the inputs' shapes and dtypes as JSON, which is checked strictly here; a
missing or malformed answer is a `ProblemInvalid` with a readable message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from search_engine.problems import ProblemError, validate_problem_source


class ProblemInvalid(ProblemError):
    """An uploaded problem failed validation (static or in the sandbox); the message says why.
    A `ProblemError`, so one `except` covers every way a problem is unusable."""


@dataclass
class ProblemInfo:
    input_shapes: list[list[int]] = field(default_factory=list)
    input_dtypes: list[str] = field(default_factory=list)
    dtype: str = "float32"
    parameter_count: int = 0


VALIDATE_MEMORY_BYTES = 4 << 30
_DTYPE = re.compile(r"[a-z][a-z0-9_]{0,15}")
_MAX_INPUTS = 256
_MAX_RANK = 16
_MAX_DIM = 1 << 48


def check_problem_static(source: str) -> None:
    """The checks that need no run (`problems.validate_problem_source`: one rule)."""
    if not source.strip():
        raise ProblemInvalid("The problem file is empty.")
    try:
        validate_problem_source(source)
    except ProblemError as exc:
        message = str(exc)
        raise ProblemInvalid(f"{message[:1].upper()}{message[1:]}.") from None


def check_problem(source: str, timeout_s: float = 30.0,
                  memory_bytes: int = VALIDATE_MEMORY_BYTES) -> ProblemInfo:
    """Validate statically, then by running it in the sandbox; raise ProblemInvalid."""
    from search_engine.problem_probe import ProbeFailed, error_text, run_probe

    check_problem_static(source)
    try:
        payload = run_probe(source, "validate", timeout_s=timeout_s,
                            memory_bytes=memory_bytes).payload
    except ProbeFailed as exc:
        if exc.kind == "timeout":
            raise ProblemInvalid(f"Importing the problem, calling get_inputs() and forward() "
                                 f"took over {timeout_s:.0f} s.") from None
        if exc.kind == "memory":
            raise ProblemInvalid(f"Running the problem {exc} (the limit for a problem)."
                                 ) from None
        raise ProblemInvalid(f"The problem could not be checked: {exc}.") from None
    if not payload["ok"]:
        message = error_text(payload)
        if message.startswith("MemoryError"):
            message = f"it needs more than {memory_bytes / (1 << 30):.3g} GiB of memory " \
                      f"(the limit for a problem) ({message})"
        raise ProblemInvalid(f"Running the problem failed: {message}")
    return problem_info_from_json(payload.get("info"))


def problem_info_from_json(data: Any) -> ProblemInfo:
    """The sandbox's `info` as a ProblemInfo; ProblemInvalid when it is out of shape."""
    def bad(what: str) -> ProblemInvalid:
        return ProblemInvalid(f"The problem could not be checked: the sandbox's answer is "
                              f"malformed ({what}).")

    if not isinstance(data, dict) or set(data) != {"input_shapes", "input_dtypes", "dtype",
                                                   "parameter_count"}:
        raise bad("fields")
    shapes, dtypes = data["input_shapes"], data["input_dtypes"]
    if not isinstance(shapes, list) or not 0 < len(shapes) <= _MAX_INPUTS:
        raise bad("input_shapes")
    for shape in shapes:
        if not isinstance(shape, list) or len(shape) > _MAX_RANK or not all(
                _is_int(d) and 0 <= d <= _MAX_DIM for d in shape):
            raise bad("input_shapes")
    if not isinstance(dtypes, list) or len(dtypes) != len(shapes) or not all(
            isinstance(d, str) and _DTYPE.fullmatch(d) for d in dtypes):
        raise bad("input_dtypes")
    dtype = data["dtype"]
    if not isinstance(dtype, str) or dtype not in dtypes:
        raise bad("dtype")
    count = data["parameter_count"]
    if not _is_int(count) or not 0 <= count <= 1 << 48:
        raise bad("parameter_count")
    return ProblemInfo(input_shapes=[list(s) for s in shapes], input_dtypes=list(dtypes),
                       dtype=dtype, parameter_count=count)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
