"""Layer 3 of the offline synthesizer: Triton source from a planned graph and its parameters,
one writer per pattern (elementwise, rows, matmul, conv, pooling, scans, matmul_variants,
attention, the staged reduction and pointwise stages) on shared emission helpers
(`codegen.py`, `staged_context.py`, `staged_expr.py`, `rows_*.py`)."""
