"""What the parent takes from the child's replies (`candidate_run`, `resident`, `screening`).

The child is the candidate's process: every byte of a reply is the candidate's to choose.
The report the verdict is made from holds what the PARENT computed (each trial's verdict,
the ghost replay's, the load's evidence, timings, the second shape, ...) beside what it
asked the child for. So a reply never merges wholesale: it may add only the fields named
below, each of its type and bounded, and never replaces a key the parent owns; an unknown
or ill-typed field is a `protocol.violation` (the honest harness never sends one). A new
field of the child's evidence is added here, or the parent refuses it.
"""

from __future__ import annotations

from search_engine.evaluation.sandbox import ProtocolViolation

MAX_ITEMS = 4096  # entries of a list or a mapping (MAX_PROJECTIONS projections at most)
MAX_TEXT = 16384  # characters of a string (kernel names, demangled ones too; op names)
PROTOCOL_KEYS = frozenset({"ok", "kind", "re", "fds", "fd_count"})  # the wire's own


def _fail(where: str, why: str):
    raise ProtocolViolation(f"{where}: {why}"[:600])


def _int(value, where: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        _fail(where, f"expected an integer, got {type(value).__name__}")


def _number(value, where: str) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        _fail(where, f"expected a number, got {type(value).__name__}")


def _text(value, where: str) -> None:
    if not isinstance(value, str):
        _fail(where, f"expected a string, got {type(value).__name__}")
    if len(value) > MAX_TEXT:
        _fail(where, f"a string of {len(value)} characters (at most {MAX_TEXT})")


def _optional(check):
    def optional(value, where: str) -> None:
        if value is not None:
            check(value, where)
    return optional


def _scalar(value, where: str) -> None:
    """A diagnostic's value: a number, a short string or nothing."""
    if value is not None and not isinstance(value, (int, float)):
        _text(value, where)


def _list(check, most: int = MAX_ITEMS):
    def a_list(value, where: str) -> None:
        if not isinstance(value, list):
            _fail(where, f"expected a list, got {type(value).__name__}")
        if len(value) > most:
            _fail(where, f"a list of {len(value)} items (at most {most})")
        for i, item in enumerate(value):
            check(item, f"{where}[{i}]")
    return a_list


def _mapping(check):
    """A mapping of short strings to values `check` accepts (counts per name, ...)."""
    def a_mapping(value, where: str) -> None:
        if not isinstance(value, dict):
            _fail(where, f"expected a mapping, got {type(value).__name__}")
        if len(value) > MAX_ITEMS:
            _fail(where, f"a mapping of {len(value)} entries (at most {MAX_ITEMS})")
        for key, item in value.items():
            _text(key, f"{where} key")
            check(item, f"{where}[{key[:80]!r}]")
    return a_mapping


def _record(fields: dict):
    """A mapping with only the names in `fields`, each of its type (any may be missing)."""
    def a_record(value, where: str) -> None:
        if not isinstance(value, dict):
            _fail(where, f"expected a mapping, got {type(value).__name__}")
        unknown = sorted(map(str, set(value) - set(fields)))
        if unknown:
            _fail(where, f"fields the parent does not accept: {', '.join(unknown)[:200]}")
        for key, item in value.items():
            fields[key](item, f"{where}.{key}")
    return a_record


_NAMES = _list(_text)
_COUNTS = _mapping(_int)

# the `evidence` request's reply (child.CandidateServer.on_evidence): merged into the report
EVIDENCE = {
    "tampered_timers": _NAMES,
    "tampered_harness": _NAMES,
    "own_kernels": _NAMES,
    "own_kernel_symbols": _NAMES,
    "threads_total": _COUNTS,
    "default_stream": _optional(_int),
    "kernel_metadata": _list(_record({
        "name": _text, "n_regs": _scalar, "n_spills": _scalar, "shared_bytes": _scalar,
        "num_warps": _scalar, "num_stages": _scalar})),
    "aten_bytes": _int,
    "aten_ops": _COUNTS,
    "device_memory": _COUNTS,
}

# the `profile` reply: device microseconds per kernel name
PROFILE = {"profile_us": _mapping(_number)}

# the `load` reply's evidence (what grew while the candidate was imported and built)
LOAD_EVIDENCE = {"host_reads": _COUNTS, "scalar_reads": _COUNTS, "dispatch_escapes": _COUNTS,
                 "threads": _COUNTS}

# one call's evidence (candidate_call.CandidateCalls._run_call): a trial's record
CALL_EVIDENCE = {
    **LOAD_EVIDENCE,
    "own_launches": _int,
    "other_launches": _NAMES,
    "streams": _list(_int),
    "mutations": _NAMES,
    "aliases": _NAMES,
    "kernel_seconds": _number,
    "kernel_bytes": _int,
    "torch_in_kernel": _COUNTS,
    "torch_bytes": _int,
    "torch_compute": _COUNTS,
    "dispatch_scalar_reads": _COUNTS,
    "threads_alive": _int,
    "tampered_harness": _NAMES,
    "host_callables": _mapping(_NAMES),
    "projections": _list(_list(_number, 8)),
    "projections_total": _int,
    "spotted": _int,
}

# What the parent computes into a report or a trial's record: no reply may set these.
PARENT_KEYS = frozenset({
    "trials", "phases", "correctness", "outputs", "timing", "load", "ghost", "shape_check",
    "profile_us", "profile_error", "sampled_references", "resident_steps",
    "reference_device_memory", "timed_consistency", "timing_error", "timing_attempts",
    "timing_floor_ms", "timing_noise", "timing_pad_ms", "timing_quiet", "timing_raw_median_ms",
    "host_median_ms", "measured_s", "open_max", "trial", "torch_answer_moved", "verdict",
})
assert not PARENT_KEYS & (set(EVIDENCE) | set(LOAD_EVIDENCE)), "a parent key in a schema"


def checked_fields(fields: dict, schema: dict, where: str) -> dict:
    """`fields` (a reply's, without the wire's own keys) when every one is named in `schema`
    and of its type; else ProtocolViolation. A new dict: later changes are the parent's."""
    _record(schema)(fields, where)
    return dict(fields)


def checked_evidence(reply: dict) -> dict:
    """The evidence in an `evidence` reply, checked (see EVIDENCE)."""
    return checked_fields({k: v for k, v in reply.items() if k not in PROTOCOL_KEYS},
                          EVIDENCE, "the evidence reply")


def checked_call_evidence(reply: dict) -> dict:
    """The evidence of a call's reply, checked (see CALL_EVIDENCE)."""
    return checked_fields(reply.get("evidence"), CALL_EVIDENCE, "a call's evidence")


def merge_evidence(report: dict, evidence: dict) -> None:
    """Checked evidence into the parent's report, where a key the parent owns or one the
    report already holds is never replaced: the parent's own keys always win."""
    report.update({k: v for k, v in evidence.items()
                   if k not in PARENT_KEYS and k not in report})


def text_of(value, default: str, limit: int = 2000) -> str:
    """A reply's message for a report: a string, cut to `limit` characters."""
    return value[:limit] if isinstance(value, str) else default
