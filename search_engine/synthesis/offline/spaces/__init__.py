"""Layer 4 of the offline synthesizer: per family, its parameters, defaults per target, moves
with what each is meant to change, and the resource limits (`resources.py`: shared memory,
registers) that prune a configuration before it is evaluated."""
