"""KernelHub's benchmarks: stand-alone scripts (`python benchmarks/NAME.py`) and the GPU
suite runner (`python -m benchmarks`, see benchmarks/__main__.py)."""
