"""Layer 1 of the offline synthesizer: trace a problem's `Model` (meta device, torch.fx) into a
plain op graph (`ir.py`): ops, shapes, dtypes, parameters and views, pruned to the output, with
no knowledge of kernels. Runs in the sandbox only (`search_engine.problem_probe`)."""
