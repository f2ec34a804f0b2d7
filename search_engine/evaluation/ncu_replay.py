"""Nsight Compute over two calls of a correct candidate, with nothing trusted that the
sandbox could have written.

ncu runs inside the same kind of sandbox as the candidate (uid 65534, its namespaces), in a
FRESH workdir: the candidate's own workdir may hold links or FIFOs planted at any name. The
parent writes the replay's inputs with `write_fresh` (a planted name is removed, never
followed) and reads ncu's CSV back with `read_untrusted` (no links, no FIFOs, a bounded size):
the replay runs candidate code that can plant them again before ncu writes.
"""

from __future__ import annotations

import io
import shutil
import sys

from search_engine.evaluation import diagnostics as diag
from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.isolation.untrusted_files import read_untrusted, write_fresh
from search_engine.evaluation.sandbox import make_workdir, run_sandboxed_command

CSV_LIMIT = 8 << 20  # ncu's CSV of a handful of kernels is kilobytes


def run_ncu_replay(config: EvaluationConfig, problem_source: str, candidate_source: str, ref,
                   kernel_names: list[str], env_extra: dict[str, str]) -> dict:
    """ncu's metrics of the candidate's kernels, or {"error", "log"} saying why none."""
    import torch

    workdir = make_workdir("kernelhub-ncu-")
    try:
        candidate_file, inputs_file = workdir / "candidate.py", workdir / "ncu_inputs.pt"
        log_file = workdir / "ncu.csv"
        write_fresh(candidate_file, candidate_source.encode())
        data = {"init": ref.init_inputs, "state": ref.state_dict, "seed": ref.init_seed}
        if ref.resident:  # the replay draws trial 0 on the device itself
            write_fresh(workdir / "ncu_problem.py", problem_source.encode())
            data.update(draw=list(ref.schedule[0]), problem_file=str(workdir / "ncu_problem.py"))
        else:
            data["inputs"] = ref.inputs[0]
        buffer = io.BytesIO()
        torch.save(data, buffer)
        write_fresh(inputs_file, buffer.getbuffer())
        argv = [*diag.ncu_command(kernel_names, str(log_file)), sys.executable, "-m",
                "search_engine.evaluation.child", "--mode", "ncu", "--device", "cuda",
                "--inputs", str(inputs_file), "--candidate", str(candidate_file)]
        outcome = run_sandboxed_command(argv, workdir, timeout_s=config.ncu_timeout_s,
                                        limits=config.limits, env_extra=env_extra, gpu=True,
                                        extra_ro_paths=diag.ncu_paths())
        try:
            text = read_untrusted(log_file, CSV_LIMIT).decode(errors="replace")
        except OSError as exc:
            return {"error": f"ncu wrote no report that could be read ({exc})", "log": outcome.log[-800:]}
        parsed = diag.parse_ncu_csv(text)
        return parsed or {"error": "no ncu metrics parsed", "log": text[-800:]}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
