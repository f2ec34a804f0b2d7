"""`LocalExecutor`: evaluations on this host, in parallel.

Each submitted request runs `evaluate()` on a worker thread; each evaluation is its own
sandboxed subprocess, so compiling and correctness checking of several candidates use
several CPU cores at once. Timing is serialized per GPU by the flock in `gpu_lock`
(the child asks for the GPU before its timed loops and releases it after), so two
candidates are never timed on one GPU at the same time. References and baseline timings
are computed once per problem and shared by later candidates; each candidate gets a warm,
single-use sandbox (started ahead with torch, Triton and the CUDA context up).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from search_engine.evaluation.cancellation import CancelScope
from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.reference import ReferenceCache
from search_engine.evaluation.result import PROBLEM_DEFECT, EvaluationResult
from search_engine.hardware import DeviceUnavailable
from search_engine.problems import ProblemError
from search_engine.protocols import EvaluationRequest, ScreenRequest


class LocalExecutor:
    def __init__(self, max_workers: int | None = None, config: EvaluationConfig | None = None,
                 share_baselines: bool = True, warm_sandboxes: bool = True):
        # share_baselines: kept for callers; baselines now travel with the shared reference
        self.max_workers = max_workers or max(1, (os.cpu_count() or 2) - 1)
        self.config = config or EvaluationConfig()
        self._pool = ThreadPoolExecutor(max_workers=self.max_workers,
                                        thread_name_prefix="kernelhub-eval")
        self._references = ReferenceCache()
        self.warm_sandboxes = warm_sandboxes
        self._sandbox_pools: dict = {}
        self._pools_lock = threading.Lock()
        self._scopes: dict[Future, CancelScope] = {}  # evaluations in flight, to cancel

    def sandbox_pool(self, target: str, config: EvaluationConfig):
        """Warm single-use candidate sandboxes, one pool per target and sandbox settings."""
        if not self.warm_sandboxes:
            return None
        from search_engine.evaluation.pipeline import candidate_pool
        from search_engine.hardware import get_target

        try:
            hw = get_target(target)
        except ValueError:
            return None  # evaluate() reports the bad target
        if not hw.is_interpreter and not _cuda_available():
            return None  # evaluate() says this host has no GPU
        key = (hw.name, config.limits, config.log_chars,
               config.resident_on("cpu" if hw.is_interpreter else "cuda"))
        with self._pools_lock:
            if key not in self._sandbox_pools:
                self._sandbox_pools[key] = candidate_pool(
                    hw, config, size=self._warm_pool_size(config, hw.is_interpreter))
            return self._sandbox_pools[key]

    def _warm_pool_size(self, config: EvaluationConfig, interpreter: bool) -> int:
        """One spare per pool on the interpreter (cheap starts); on a GPU two per worker and
        at least four, since a start (seconds, CUPTI included) outlasts a later candidate's
        evaluation, and at least one screening's lanes, which it takes all at once (cold
        starts there ran 3-11 s a lane, on the screening's clock)."""
        if config.warm_pool_size > 0:
            return config.warm_pool_size
        if interpreter:
            return self.max_workers + 1
        from search_engine.evaluation.screening import gpu_lanes

        return max(4, 2 * self.max_workers, gpu_lanes(config))

    def submit(self, request: EvaluationRequest) -> Future[EvaluationResult]:
        return self._cancellable(self._run_in, request)

    def _cancellable(self, work, request) -> Future:
        """`work(scope, request)` on a worker thread, its scope kept for `cancel`."""
        scope = CancelScope()
        future = self._pool.submit(work, scope, request)
        with self._pools_lock:
            self._scopes[future] = scope
        future.add_done_callback(self._forget_scope)
        return future

    def screen(self, request: ScreenRequest) -> Future:
        """Screen a family of configurations (`screening.screen`) on a worker thread, with
        the shared reference and the same warm sandboxes as full evaluations. A problem or
        host that cannot run it raises from the future (`ProblemError`, `ValueError`,
        `DeviceUnavailable`): nothing was screened."""
        return self._cancellable(self._screen_in, request)

    def _screen_in(self, scope: CancelScope, request: ScreenRequest):
        from search_engine.evaluation.screening import screen

        config = request.options.get("config") or self.config
        with scope.entered():
            return screen(request.problem_source, request.sources, target=request.target,
                          precision_policy=request.precision_policy,
                          timeout_s=request.timeout_s, config=config,
                          deadline_s=request.deadline_s, reference_cache=self._references,
                          sandbox_pool=self.sandbox_pool(request.target, config))

    def cancel(self, future: Future) -> None:
        """Stop an evaluation: a queued one never starts; a running one has its sandboxes
        killed, so its thread returns at once (its result is a failure nobody applies)."""
        if future.cancel():
            return
        with self._pools_lock:
            scope = self._scopes.get(future)
        if scope is not None:
            scope.cancel()

    def _forget_scope(self, future: Future) -> None:
        with self._pools_lock:
            self._scopes.pop(future, None)

    def _run_in(self, scope: CancelScope, request: EvaluationRequest) -> EvaluationResult:
        with scope.entered():
            return self._run(request)

    def _run(self, request: EvaluationRequest) -> EvaluationResult:
        from search_engine.evaluation.pipeline import evaluate

        config = request.options.get("config") or self.config
        try:
            return evaluate(
                request.problem_source, request.candidate_source, target=request.target,
                precision_policy=request.precision_policy, timeout_s=request.timeout_s,
                config=config, reference_cache=self._references,
                sandbox_pool=self.sandbox_pool(request.target, config),
            )
        except DeviceUnavailable as exc:  # nothing ran: the host's fault, not the kernel's
            return EvaluationResult(status="runtime_error", target=request.target,
                                    precision_policy=request.precision_policy,
                                    message=f"not evaluated (infrastructure): {exc}",
                                    diagnostics={"infrastructure_failure": str(exc)})
        except ProblemError as exc:  # the problem itself is unusable
            return EvaluationResult(status=PROBLEM_DEFECT, target=request.target,
                                    precision_policy=request.precision_policy, message=str(exc))
        except ValueError as exc:  # a bad target/policy: report, don't crash the search
            return EvaluationResult(status="runtime_error", target=request.target,
                                    precision_policy=request.precision_policy,
                                    message=f"evaluation could not start: {exc}")

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._pools_lock:
            pools, self._sandbox_pools = list(self._sandbox_pools.values()), {}
        for pool in pools:
            pool.close()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()
