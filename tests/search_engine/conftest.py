"""Fixtures shared by the search and synthesis tests."""

import pytest


@pytest.fixture(scope="session")
def local_executor():
    """The real evaluator (sandboxed subprocesses), two workers, no ncu."""
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.executor import LocalExecutor

    executor = LocalExecutor(max_workers=2, config=EvaluationConfig(interpreter_reps=1,
                                                                    ncu="off"))
    yield executor
    executor.shutdown()
