"""Layer 2 of the offline synthesizer: which kernels an op graph becomes. `classify.py` names
the family (one fused kernel, or a staged pipeline) or what is refused and why; `stages.py`
cuts a staged graph into kernels at its anchors; `gemm_epilogue.py` splits a GEMM from its
fused epilogue and its reduction tail; `kernel_plan.py` reads those decisions back as data
(`KernelPlan`: the kernels by pattern, or what is refused and why)."""
