"""The candidate checked at a second shape: the problem's first trial drawn at another batch
size (`batch_shapes`, in the problem's sandbox), run by the candidate and compared with the
float64 reference at the same tolerance as the official trials.

The contract (fields of `EvaluationResult`):
- `timed_shapes`: the input shapes the timings are for (the problem's own);
- `verified_shapes`: every input-shape list at which the candidate's answers were checked
  and found right (the official shape, plus the second one when it passed);
- `shape_specific`: True when the candidate does not run correctly at the second shape;
- `shape_check`: what happened there: ``passed``, ``refused`` (it raised, e.g. "generated
  for x of shape ..., verified only there": stated, not silent), ``wrong`` (it answered
  wrongly: also a warning flag, ``shape.wrong_at_other_shape``, so no reader misses it),
  or ``not_checked`` with the reason (no batch dimension, a reference that does not run
  there, a candidate that failed its official trials).
The status stays the official trials' verdict: the problem is defined at its shape.
"""

from __future__ import annotations

from search_engine.evaluation import wire
from search_engine.evaluation.correctness import compare_trial
from search_engine.evaluation.result import IntegrityFlag

SET = 9_999  # the candidate sandbox's input set for the second shape (trials are 0..n)


def check(run, session, ref) -> dict:
    """Run the candidate at the reference's second shape; the `shape_check` record."""
    second = getattr(ref, "second_shape", None) or {}
    if "inputs" not in second:
        return {"status": "not_checked",
                "message": second.get("skipped", "no second shape was drawn")}
    shapes = shapes_of(ref)
    slots, tensors = wire.encode_values(second["inputs"])
    run._request(session, "stage", {"set": SET, "inputs": slots}, tensors)
    cap = 4 * ref.output_bytes + (1 << 20)
    reply, out = run._request(session, "call", {"set": SET}, max_reply_bytes=cap)
    run._request(session, "unstage", {"set": SET})
    if not reply.get("ok"):
        return {**shapes, "status": "refused",
                "message": str(reply.get("message", "the candidate failed"))[:600]}
    expected = second["outputs64"]
    if len(out) != len(expected) or any(tuple(o.shape) != tuple(e.shape)
                                        for o, e in zip(out, expected)):
        return {**shapes, "status": "wrong", "message": "outputs of the wrong shape: "
                f"{[list(o.shape) for o in out]} for {[list(e.shape) for e in expected]}"}
    verdict = compare_trial(-1, 0, [o.to(run.device) for o in out],
                            [e.to(run.device) for e in expected], ref.output_dtypes,
                            run.tolerance)
    if verdict.passed:
        return {**shapes, "status": "passed", "message": "within the same tolerance"}
    return {**shapes, "status": "wrong", "message": verdict.note[:600] or
            f"max abs error {verdict.max_abs_error}"}


def shapes_of(ref) -> dict:
    """Both shapes of the reference's second-shape trial (empty when there is none)."""
    second = getattr(ref, "second_shape", None) or {}
    return {k: second[k] for k in ("official_shapes", "input_shapes", "how") if k in second}


def result_fields(shape_check: dict | None, official: list | None) -> dict:
    """`verified_shapes`, `timed_shapes`, `shape_specific` and `shape_check` of a result
    whose official trials passed (`official`: their input shapes, when known)."""
    shape_check = shape_check or {"status": "not_checked", "message": "not run"}
    official = official or shape_check.get("official_shapes")
    verified = [official] if official else []
    if shape_check["status"] == "passed":
        verified.append(shape_check["input_shapes"])
    return {"verified_shapes": verified, "timed_shapes": [official] if official else [],
            "shape_specific": shape_check["status"] in ("refused", "wrong"),
            "shape_check": shape_check}


def flags(shape_check: dict | None) -> list[IntegrityFlag]:
    """A warning when the candidate answers wrongly (not refuses) at the second shape."""
    if not shape_check or shape_check.get("status") != "wrong":
        return []
    return [IntegrityFlag("shape.wrong_at_other_shape",
                          f"correct at {shape_check.get('official_shapes')} but wrong at "
                          f"{shape_check.get('input_shapes')}: {shape_check.get('message')}",
                          severity="warning")]
