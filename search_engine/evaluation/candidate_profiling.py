"""Device time in the candidate's sandbox: torch.profiler per kernel and the ncu replay.

CUPTI is started once while the sandbox waits (`_warm_profiler`); `_profile_device_time`
sums each kernel's device time over a few calls; `replay_for_ncu` (`--mode ncu`) rebuilds
the candidate from files and calls it twice for ncu wrapped around the process. Here too
the model helpers the server shares: the reference's weights into ModelNew and the call
that timing and profiling repeat. Imports only the standard library at module level.
"""

from __future__ import annotations

from pathlib import Path


def _load_weights(model, state: dict) -> None:
    """The reference's weights through the candidate's own `load_state_dict` (it may rename
    them); on shape mismatches, those that match (the seed did the rest)."""
    try:
        model.load_state_dict(state, strict=False)
    except RuntimeError:
        own = model.state_dict()
        model.load_state_dict(
            {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}, strict=False)


def _timing_call(model):
    import torch

    def call(inputs):
        with torch.no_grad():
            return model(*inputs)

    return call


def _warm_profiler() -> None:
    """Start CUPTI once while the sandbox waits in the pool (seconds, paid off the critical
    path), so a candidate's coverage profile costs only its own calls."""
    import torch

    x = torch.ones(1, device="cuda")
    _profile_device_time(lambda inputs: inputs[0].add(1), [[x]], 1)


def _profile_device_time(fn, trials, iterations: int) -> dict[str, float]:
    """Device time per kernel name (microseconds) over a few calls, from torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(iterations):
            fn(trials[i % len(trials)])
        torch.cuda.synchronize()
    per_kernel: dict[str, float] = {}
    for evt in prof.events():
        if str(getattr(evt, "device_type", "")).endswith("CUDA"):
            duration = getattr(evt, "device_time", None)
            if duration is None:
                duration = getattr(evt, "cuda_time", 0.0)
            per_kernel[evt.name] = per_kernel.get(evt.name, 0.0) + float(duration or 0.0)
    return per_kernel


def replay_for_ncu(inputs_file: str, candidate_file: str) -> None:
    """Two calls of the candidate on one input set, for `ncu` wrapped around this process."""
    import torch
    import triton  # noqa: F401

    from search_engine.problems import exec_module

    data = torch.load(inputs_file, weights_only=True)
    module = exec_module(Path(candidate_file).read_text(), "kernelhub_candidate", candidate_file)
    torch.manual_seed(int(data["seed"]))
    model = module.ModelNew(*data["init"])
    _load_weights(model, data["state"])
    model = model.to("cuda").eval()
    if "draw" in data:  # resident evaluations: trial 0 drawn here, on the device
        from search_engine.problems import make_trial_inputs

        problem = exec_module(Path(data["problem_file"]).read_text(), "kernelhub_problem",
                              data["problem_file"])
        seed, scale, shift = data["draw"]
        with torch.device("cuda"):
            data["inputs"] = make_trial_inputs(problem, int(seed), float(scale), float(shift))
    inputs = [x.to("cuda") if isinstance(x, torch.Tensor) else x for x in data["inputs"]]
    call = _timing_call(model)
    for _ in range(2):
        call(inputs)
    torch.cuda.synchronize()
