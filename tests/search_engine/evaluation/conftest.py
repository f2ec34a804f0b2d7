"""Fixtures for the evaluation tests: library problems, candidate files, a fast config."""

from __future__ import annotations

from pathlib import Path

import pytest

from search_engine.evaluation.config import EvaluationConfig
from search_engine.problems_library import library_problem

CANDIDATES = Path(__file__).parent / "candidates"


def candidate(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text()


@pytest.fixture(scope="session")
def softmax_problem():
    return library_problem("softmax", scale="small")


@pytest.fixture
def fast_config() -> EvaluationConfig:
    # Five trials (the minimum the issue asks for); one interpreter timing pass.
    return EvaluationConfig(trials=5, interpreter_reps=1, ncu="off")


@pytest.fixture
def run_eval(softmax_problem, fast_config):
    from search_engine.evaluation.pipeline import evaluate

    def run(source: str, problem=None, timeout_s: float = 60.0, **config_changes):
        from dataclasses import replace

        config = replace(fast_config, **config_changes) if config_changes else fast_config
        return evaluate(problem or softmax_problem, source, target="interpreter",
                        timeout_s=timeout_s, config=config)

    return run


@pytest.fixture(scope="session")
def clean_softmax_result(softmax_problem):
    """The clean candidate's result, shared by the tests that only read it."""
    from search_engine.evaluation.pipeline import evaluate

    config = EvaluationConfig(trials=5, interpreter_reps=1, ncu="off")
    return evaluate(softmax_problem, candidate("clean_softmax"), target="interpreter",
                    timeout_s=60, config=config)
