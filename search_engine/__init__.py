"""KernelHub's search engine: a plain Python library (torch, triton, numpy; never django).

It evaluates candidate kernels honestly, searches a tree of candidates and synthesizes
new ones. The web app, the CLI (`python -m search_engine`) and tests drive the same code.
"""

__version__ = "0.1.0"
