"""Fixtures for synthesizer tests: run a generated candidate in-process (interpreter)."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import pytest
import torch

LIBRARY = Path(__file__).resolve().parents[3] / "search_engine" / "problems_library"
_counter = itertools.count()


def library_source(name: str) -> str:
    return (LIBRARY / f"{name}.py").read_text()


def load_problem(problem_source: str):
    """The test's own (trusted) problem as a module, in this process. The library never does
    this: it runs problems only in the sandbox (search_engine.problem_probe)."""
    import types

    module = types.ModuleType("kernelhub_test_problem")
    exec(compile(problem_source, "problem.py", "exec"), module.__dict__)
    return module


def load_candidate(candidate_source: str, tmp_path: Path):
    """A generated candidate imported from a file (Triton reads its kernels' source)."""
    path = tmp_path / f"candidate_{next(_counter)}.py"
    path.write_text(candidate_source)
    spec = importlib.util.spec_from_file_location(path.stem + f"_{id(path)}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_candidate(problem_source: str, candidate_source: str, tmp_path: Path, seed: int = 1):
    """(reference output, candidate output, launched kernel names) on the problem's inputs."""
    module = load_candidate(candidate_source, tmp_path)
    problem = load_problem(problem_source)
    torch.manual_seed(0)
    reference = problem.Model(*problem.get_init_inputs()).eval()  # as the evaluator runs it
    torch.manual_seed(0)
    candidate = module.ModelNew(*problem.get_init_inputs()).eval()
    candidate.load_state_dict(reference.state_dict())
    torch.manual_seed(seed)
    inputs = problem.get_inputs()
    launched = []
    kernels = [v for v in vars(module).values() if hasattr(v, "run") and hasattr(v, "fn")]
    originals = {}
    for kernel in kernels:
        originals[kernel] = kernel.run

        def spy(*args, _k=kernel, **kwargs):
            launched.append(_k.fn.__name__)
            return originals[_k](*args, **kwargs)

        kernel.run = spy
    with torch.no_grad():
        expected = reference(*[_copy(x) for x in inputs])
        got = candidate(*[_copy(x) for x in inputs])
    return expected, got, launched


def _copy(value):
    """A fresh copy of a tensor input; Python scalars (a problem's scale factor) as they are."""
    return value.clone() if isinstance(value, torch.Tensor) else value


def traced_analysis(source: str):
    """The test's own trusted problem traced in this process and prepared as the synthesizer
    does (the library itself traces in the sandbox)."""
    from search_engine.synthesis.offline.plan.classify import analysis_from_json
    from search_engine.synthesis.offline.frontend.json_io import analysis_to_json
    from search_engine.synthesis.offline.frontend.trace import trace_module
    from search_engine.synthesis.offline.plan.gemm_epilogue import prepared

    return prepared(analysis_from_json(analysis_to_json(trace_module(load_problem(source)))))


def traveling_analysis(source: str):
    """`traced_analysis` with the batch variants the sandboxed probe adds (the problem traced
    at two more batch sizes), so the synthesizer's modules can take any batch size."""
    from search_engine.problem_probe import _batch_analyses
    from search_engine.synthesis.offline.plan.classify import analysis_from_json
    from search_engine.synthesis.offline.frontend.json_io import analysis_to_json
    from search_engine.synthesis.offline.frontend.trace import trace_module
    from search_engine.synthesis.offline.plan.gemm_epilogue import prepared

    module = load_problem(source)
    an = analysis_from_json(analysis_to_json(trace_module(module)))
    an.batch_variants = {v["batch"]: analysis_from_json(v["analysis"])
                         for v in _batch_analyses(module, an)}
    return prepared(an)


def assert_default_kernel_matches(source: str, target: str, tmp_path: Path, seeds=(1, 2),
                                  tolerance: float = 1e-4, equal_nan: bool = False) -> str:
    """Render the family's default parameters for `target` and check the kernel against the
    reference on each seed's inputs; returns the family."""
    from search_engine.synthesis.offline.synthesizer import family_module

    an = traced_analysis(source)
    templates = family_module(an)
    candidate = templates.render(source, an, templates.default_params(an, target, "strict"))
    for seed in seeds:
        expected, got, launched = run_candidate(source, candidate, tmp_path, seed)
        assert launched, "the candidate launched no kernel"
        assert got.shape == expected.shape and got.dtype == expected.dtype
        torch.testing.assert_close(got.double(), expected.double(), atol=tolerance,
                                   rtol=tolerance, equal_nan=equal_nan)
    return an.family


@pytest.fixture
def run(tmp_path):
    return lambda problem, candidate, seed=1: run_candidate(problem, candidate, tmp_path, seed)


# -- a small OpenAI-compatible server, inside the test suite --------------------------------

import json  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402


def chat_reply(text: str, prompt_tokens: int = 120, completion_tokens: int = 80) -> dict:
    return {"status": 200, "body": {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}}}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        server = self.server
        with server.lock:
            server.requests.append({"path": self.path, "body": body,
                                    "auth": self.headers.get("authorization")})
            reply = server.replies.pop(0) if server.replies else server.default
        if reply.get("delay"):
            time.sleep(reply["delay"])
        data = json.dumps(reply.get("body", {"error": {"message": "scripted error"}})).encode()
        try:
            self.send_response(reply.get("status", 200))
            for key, value in (reply.get("headers") or {}).items():
                self.send_header(key, value)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out first
            pass

    def log_message(self, *args):
        pass


class FakeLLMServer:
    """`replies` are served in order (then `default`); `requests` records what was sent."""

    def __init__(self):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.lock = threading.Lock()
        self.httpd.requests = []
        self.httpd.replies = []
        self.httpd.default = {"status": 500, "body": {"error": {"message": "no reply left"}}}
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def requests(self):
        return self.httpd.requests

    def queue(self, *replies):
        self.httpd.replies.extend(replies)

    def prompts(self) -> list[str]:
        return [r["body"]["messages"][-1]["content"] for r in self.requests]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def llm_server():
    server = FakeLLMServer()
    yield server
    server.close()

