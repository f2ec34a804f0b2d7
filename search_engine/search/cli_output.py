"""What `optimize` and `suite` show and write: the progress bar on the terminal, the JSON
summary of one search (its shape is in cli_commands.py's docstring), the printed summary
table and the suite's report."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any


class ProgressBar:
    """evaluations done / budget and the best speedup so far, redrawn on every event."""

    def __init__(self, budget: int, stream, width: int = 24):
        self.budget, self.stream, self.width = budget, stream, width
        self.evaluated, self.best = 0, None
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def __call__(self, event: dict[str, Any]) -> None:
        kind, payload = event["type"], event["payload"]
        if kind == "node_evaluated" and payload.get("id") != 0 and \
                payload.get("status") not in ("reference", "cancelled"):
            self.evaluated += 1
        elif kind == "best_improved":
            self.best = payload
        elif kind == "log":  # warnings and what the search did (screenings, skills)
            level = payload.get("level")
            self._line(f"  {payload['message']}" if level == "info"
                       else f"  {level}: {payload['message']}")
            return
        elif kind != "status_changed":
            return
        self._draw()

    def _draw(self) -> None:
        done = min(self.evaluated, self.budget)
        filled = int(self.width * done / max(self.budget, 1))
        bar = "#" * filled + "." * (self.width - filled)
        best = "best: none yet"
        if self.best is not None:
            speedup = self.best.get("speedup_vs_eager")
            best = (f"best: node {self.best['node_id']} "
                    + (f"{speedup:.2f}x vs eager" if speedup else "correct (interpreter: "
                       "no speedup)") + f", reward {self.best['reward']:.2f}")
        text = f"[{bar}] {done}/{self.budget} evaluations | {best}"
        if self.tty:
            self.stream.write("\r" + text.ljust(100))
            self.stream.flush()
        else:
            self._line(text)

    def _line(self, text: str) -> None:
        self.stream.write(("\n" if self.tty else "") + text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")


def outcome_json(outcome, problem_name: str, args) -> dict[str, Any]:
    """The JSON summary of one search (`optimize --json`'s last line)."""
    best = outcome.best
    best_json = None
    if best is not None:
        result = best.get("result") or {}
        best_json = {"node_id": best["id"], "status": best["status"], "source": best["source"],
                     "reward": best["reward"], "speedup_vs_eager": best["speedup_vs_eager"],
                     "speedup_vs_compile": best["speedup_vs_compile"],
                     "speedup_label": result.get("speedup_label", ""),
                     "coverage": best["coverage"],
                     "transformation": best["origin"].get("transformation"),
                     "params": best["origin"].get("params")}
    nodes = [{"id": n["id"], "parent": n["parent_id"], "status": n["status"],
              "reward": n["reward"], "advantage": n["advantage"],
              "transformation": n["origin"].get("transformation", ""),
              "speedup_vs_eager": n["speedup_vs_eager"],
              "speedup_vs_compile": n["speedup_vs_compile"],
              "message": ((n.get("result") or {}).get("message") or "")[:300],
              "model": n["origin"].get("model", ""),
              "cost_usd": float((n["origin"].get("usage") or {}).get("cost_usd") or 0.0)}
             for n in outcome.nodes]
    return {"evaluated": outcome.evaluated, "screened": getattr(outcome, "screened", 0),
            "status": outcome.status, "reason": outcome.reason,
            "stop_reason": getattr(outcome, "stop", ""),
            "problem": problem_name, "target": args.target, "strategy": args.strategy,
            "synthesizer": args.synthesizer, "seed": args.seed, "best": best_json,
            "nodes": nodes, "baselines": outcome.baselines, "elapsed_s": outcome.elapsed_s,
            "cost_usd": outcome.cost_usd, "usage": getattr(outcome, "usage", {})}


def print_summary(summary: dict[str, Any]) -> None:
    """The summary as a table of nodes and the best kernel."""
    print(f"\n{summary['status']}: {summary['reason']} ({summary['evaluated']} evaluations, "
          f"{summary['elapsed_s']:.1f} s)")
    print(f"candidates: {summary.get('screened', 0)} screened, {summary['evaluated']} fully "
          "evaluated (only fully evaluated candidates can be the best)")
    for n in summary["nodes"]:
        speed = f"{n['speedup_vs_eager']:.2f}x" if n["speedup_vs_eager"] else "-"
        reward = f"{n['reward']:.3f}" if n["reward"] is not None else "-"
        adv = f"{n['advantage']:+.3f}" if n["advantage"] is not None else "-"
        print(f"  node {n['id']:>3} <- {str(n['parent']):>4}  {n['status']:<15} reward {reward:>6}"
              f"  A {adv:>7}  {speed:>7}  {n['transformation']}")
    best = summary["best"]
    if best is None:
        print("no verified kernel found")
        return
    print(f"best: node {best['node_id']} ({best['status']}), speedup vs eager "
          f"{best['speedup_vs_eager']}, vs torch.compile {best['speedup_vs_compile']} "
          f"{best['speedup_label']}")
    precision = (summary.get("baselines") or {}).get("precision")
    if precision:
        print(f"baselines timed in {precision}")


def print_suite_rows(rows: list[dict[str, Any]], stream) -> None:
    """One line per problem of a suite: status, best speedups, why it ended."""
    for row in rows:
        print(f"  {row['problem']:<28} {row['status']:<12} "
              f"{_fmt(row.get('best_speedup_vs_eager'))} vs eager  "
              f"{_fmt(row.get('best_speedup_vs_compile'))} vs compile  "
              f"{row.get('reason', '')[:80]}", file=stream)


def _fmt(value) -> str:
    return f"{value:6.2f}x" if isinstance(value, (int, float)) else "     -"


def suite_row(path: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """One problem's row of the suite report, from its search summary."""
    best = summary.get("best") or {}
    status = summary["status"]
    if status not in ("not_covered",):
        status = "solved" if best else "unsolved"
    return {"problem": path.stem, "file": str(path), "status": status,
            "reason": summary.get("reason", ""), "ops": summary.get("ops", []),
            "evaluated": summary.get("evaluated", 0), "screened": summary.get("screened", 0),
            "best_node_id": best.get("node_id"),
            "best_reward": best.get("reward"),
            "best_speedup_vs_eager": best.get("speedup_vs_eager"),
            "best_speedup_vs_compile": best.get("speedup_vs_compile"),
            "speedup_label": best.get("speedup_label", ""),
            "baselines": summary.get("baselines", {}), "elapsed_s": summary.get("elapsed_s"),
            "best_source": best.get("source")}


def suite_report(args, folder: Path, rows: list[dict], elapsed: float) -> dict[str, Any]:
    """The suite's JSON report: every row, the counts by status, the geomean speedup."""
    speedups = [r["best_speedup_vs_eager"] for r in rows
                if isinstance(r.get("best_speedup_vs_eager"), (int, float))
                and r["best_speedup_vs_eager"] > 0]
    geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None
    return {
        "folder": str(folder), "target": args.target, "strategy": args.strategy,
        "synthesizer": args.synthesizer, "budget": args.budget, "seed": args.seed,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "elapsed_s": round(elapsed, 1),
        "summary": {"problems": len(rows),
                    "solved": sum(r["status"] == "solved" for r in rows),
                    "unsolved": sum(r["status"] == "unsolved" for r in rows),
                    "not_covered": sum(r["status"] == "not_covered" for r in rows),
                    "invalid": sum(r["status"] == "invalid" for r in rows),
                    "geomean_speedup_vs_eager": geomean},
        "problems": rows,
    }
