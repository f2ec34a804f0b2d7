"""Which shapes a candidate was verified and timed at, in words a user can act on: the
candidate page, the review card and the exported bundle all say it the same way.

The facts come from the evaluation (`verified_shapes`, `timed_shapes`, `shape_specific`,
`shape_check`: see `search_engine.evaluation.second_shape`) and from the module itself (a
generated module states whether it takes any batch size: `KH_ANY_BATCH = True`).
"""

from __future__ import annotations

from typing import Any


def shape_text(entry) -> str:
    """One checked call's input shapes, e.g. ``(32, 256)`` or ``(8, 64) + (8, 64)``."""
    return " + ".join("(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
                      + ")" for shape in entry or [])


def candidate_shapes(candidate) -> dict[str, Any]:
    """verified / timed (texts and lists), whether it is shape-specific, and `drop_in`: one
    plain sentence on whether the kernel can be used at other shapes."""
    result = candidate.result or {}
    verified, timed = result.get("verified_shapes") or [], result.get("timed_shapes") or []
    check = result.get("shape_check") or {}
    status = check.get("status", "")
    any_batch = "KH_ANY_BATCH = True" in (candidate.source or "")
    official = shape_text(timed[0]) if timed else ""
    other = shape_text(check.get("input_shapes"))
    if not verified:
        drop_in = ("Shapes not recorded (evaluated before shape checks, or not correct): use "
                   "it only at the problem's own shapes.")
    elif result.get("shape_specific"):
        what = "refused them" if status == "refused" else "gave WRONG answers"
        drop_in = (f"Verified only at {official}: at {other} it {what} "
                   f"({str(check.get('message', ''))[:160]}). Not drop-in at other shapes.")
    elif status == "passed":
        drop_in = (f"Verified at {len(verified)} shapes ({', '.join(map(shape_text, verified))})"
                   + ("; the module takes any batch size." if any_batch else
                      "; other shapes are not verified."))
    else:
        drop_in = (f"Verified only at {official} (no second shape checked: "
                   f"{check.get('message', 'not recorded')}). Not verified at other shapes.")
    return {"verified": [shape_text(v) for v in verified], "timed": [shape_text(t) for t in timed],
            "verified_shapes": verified, "timed_shapes": timed,
            "shape_specific": bool(result.get("shape_specific")), "check_status": status,
            "any_batch": any_batch and status == "passed", "drop_in": drop_in}
