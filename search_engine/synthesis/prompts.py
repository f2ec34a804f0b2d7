"""Fitting a prompt into the model's context: summarise long parents and trajectories.

`build_prompt` (llm_prompt.py) renders the message at the first `FIT_LEVELS` entry that fits the
budget; each level keeps less of the parent's code (head and tail, the middle summarised),
fewer trajectory and sibling lines (the dropped ones summarised in one line) and shorter
passages. When even the last level is too long, `fit_hard` cuts the message and says so.
Tokens are estimated at `CHARS_PER_TOKEN` characters each (a deliberately low estimate for
code, so the real count stays under the budget).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

CHARS_PER_TOKEN = 3.5


@dataclass(frozen=True)
class Level:
    code_chars: int | None  # parent / second parent source (None: whole)
    problem_chars: int | None
    trajectory_items: int | None
    sibling_items: int | None
    passage_chars: int
    message_chars: int


FIT_LEVELS: tuple[Level, ...] = (
    Level(None, None, None, None, 1200, 200),
    Level(16_000, None, 6, 6, 900, 200),
    Level(8_000, 12_000, 3, 4, 600, 160),
    Level(4_000, 6_000, 2, 2, 400, 120),
    Level(2_000, 3_000, 1, 1, 200, 80),
)


def chars_for_tokens(tokens: int) -> int:
    return max(1000, int(tokens * CHARS_PER_TOKEN))


def estimate_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def shorten_code(source: str, limit: int | None) -> str:
    """The source whole, or its head and tail with the middle summarised."""
    source = (source or "").strip()
    if limit is None or len(source) <= limit:
        return source
    head, tail = source[: int(limit * 0.6)], source[-int(limit * 0.35):]
    head, tail = head[: head.rfind("\n") + 1] or head, tail[tail.find("\n") + 1:] or tail
    omitted = source[len(head): len(source) - len(tail)]
    return (f"{head}# ... {omitted.count(chr(10)) + 1} lines ({len(omitted):,} characters) "
            f"omitted to fit the context ...\n{tail}")


def keep_last(items: list, count: int | None) -> tuple[list, list]:
    if count is None or len(items) <= count:
        return list(items), []
    return list(items[-count:]), list(items[:-count])


def summarise_dropped(views: list, what: str) -> str:
    statuses = Counter(v.status for v in views)
    rewards = [v.reward for v in views if isinstance(v.reward, (int, float))]
    best = f"; best reward {max(rewards):.3f}" if rewards else ""
    counts = ", ".join(f"{n} {s}" for s, n in statuses.most_common())
    return f"- ({len(views)} {what} summarised: {counts}{best})"


def fit_hard(prompt: str, max_chars: int, final_line: str) -> str:
    note = "\n[... the rest was cut to fit the model's context ...]\n"
    keep = max(0, max_chars - len(note) - len(final_line))
    return prompt[:keep] + note + final_line


def skill_effect_text(meta: dict) -> str:
    """A skill passage's measured effect, from its metadata (knowledge.skills.skill_effect):
    how fast its steps were, and how it did when later searches reused it."""
    meta = meta or {}
    parts = []
    if meta.get("speedup_mean") is not None:
        best = f" ({meta['speedup_best']:.2f}x best)" if meta.get("speedup_best") else ""
        parts.append(f"{meta['speedup_mean']:.2f}x mean speedup vs eager{best} over "
                     f"{meta.get('observations') or 1} step(s)")
    uses = int(meta.get("uses") or 0)
    if uses:
        gain = f", mean gain {meta['gain_mean']:.2f}x" if meta.get("gain_mean") is not None else ""
        parts.append(f"reused {uses} time(s), beat its parent {int(meta.get('helped') or 0)} "
                     f"time(s){gain}")
    elif parts:
        parts.append("not reused yet")
    return ("Measured effect: " + "; ".join(parts) + ".") if parts else ""
