"""The reward service: store evaluation requests, run them where evaluations run, keep results.

Evaluations go to `kernelhub.placement`'s shared executor (the one the search uses): local
sandboxed subprocesses, or the `gpu.<target>` queues followed in the evaluation ledger under
the key `api:<pk>`. A done-callback stores the result; reading a pending evaluation also
collects a result the ledger holds (so a web restart loses nothing in the distributed mode).
"""

from __future__ import annotations

import logging
import threading
import uuid

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone
from rest_framework.exceptions import Throttled

from kernelhub import placement
from kernelhub.api.models import Evaluation
from kernelhub.teams.models import ApiKey, Team
from search_engine.evaluation.result import EvaluationResult
from search_engine.protocols import EvaluationRequest

log = logging.getLogger(__name__)

MAX_BATCH = 64
# The result's headline facts have columns (filters, OData, exports); `result` stores the rest.
HEADLINE = ("status", "reward", "speedup_vs_eager", "speedup_vs_compile", "coverage")
CLI_KEYS = tuple(EvaluationResult.__dataclass_fields__)  # the CLI's --json key order
MAX_SOURCE_BYTES = 200_000
DEFAULT_MAX_PENDING_PER_KEY = 256
_PROCESS_STARTED = timezone.now()
_in_flight: dict[int, object] = {}  # pk -> Future, for evaluations run by this process
_in_flight_lock = threading.Lock()


def max_pending() -> int:
    return int(getattr(settings, "KERNELHUB_API_MAX_PENDING_EVALUATIONS",
                       DEFAULT_MAX_PENDING_PER_KEY))


def resolve_target(name: str) -> str:
    """A known target name; `auto` means the configured default or this host's device."""
    from search_engine.hardware import TARGETS, detect_local_target

    name = (name or "auto").strip().lower()
    if name == "auto":
        default = settings.KERNELHUB_DEFAULT_TARGET
        name = default if default and default != "auto" else detect_local_target().name
    if name not in TARGETS:
        raise ValueError(f"unknown hardware target {name!r}; known: {', '.join(TARGETS)}, auto")
    if placement.evaluations_run_here() and name != "interpreter":
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"target {name!r} needs a GPU and this server runs evaluations "
                             "on a host without one; use 'interpreter' (or 'auto')")
    return name


def evaluation_submit(*, team: Team, items: list[dict], api_key: ApiKey | None = None,
                      user=None, batch: bool = False) -> list[Evaluation]:
    """Record and queue evaluations; `items` are validated dicts (see serializers)."""
    owner = {"api_key": api_key} if api_key is not None else {"submitted_by": user}
    pending = Evaluation.objects.filter(state__in=Evaluation.PENDING_STATES, **owner).count()
    if pending + len(items) > max_pending():
        raise Throttled(detail=f"{pending} evaluations of yours are still pending; at most "
                               f"{max_pending()} may wait at once. Collect results first.")
    batch_id = uuid.uuid4() if batch else None
    with transaction.atomic():
        rows = [
            Evaluation.objects.create(
                team=team, api_key=api_key, submitted_by=user if user is not None
                and getattr(user, "pk", None) else None, batch_id=batch_id,
                problem=item.get("problem"), problem_name=item["problem_name"],
                problem_source=item["problem_source"], candidate_source=item["candidate_source"],
                target=item["target"], precision_policy=item["precision_policy"],
                timeout_s=item["timeout_s"],
            )
            for item in items
        ]
        transaction.on_commit(lambda: [_dispatch_or_fail(row) for row in rows])
    return rows


def _dispatch_or_fail(evaluation: Evaluation) -> None:
    try:
        _dispatch(evaluation)
    except Exception as exc:  # broker down, pool shut down: say so instead of queueing forever
        log.exception("could not queue evaluation %s", evaluation.pk)
        evaluation_store_result(evaluation.pk, {
            "status": "error", "message": f"could not be queued: {type(exc).__name__}: {exc}"})


def _request(evaluation: Evaluation) -> EvaluationRequest:
    return EvaluationRequest(
        problem_source=evaluation.problem_source, candidate_source=evaluation.candidate_source,
        target=evaluation.target, precision_policy=evaluation.precision_policy,
        timeout_s=evaluation.timeout_s,
    )


def job_key(pk: int) -> str:
    return f"api:{pk}"


def _dispatch(evaluation: Evaluation) -> None:
    future = placement.evaluation_executor().submit(_request(evaluation),
                                                    key=job_key(evaluation.pk))
    with _in_flight_lock:
        _in_flight[evaluation.pk] = future
    future.add_done_callback(lambda f, pk=evaluation.pk: _store_future(pk, f))


def _store_future(pk: int, future) -> None:
    with _in_flight_lock:
        if _in_flight.get(pk) is not future:  # a stale future (its row gone, its id reused)
            return
    close_old_connections()
    try:
        try:
            data = future.result().to_dict()
        except Exception as exc:  # ProblemError, bad policy...: what the CLI prints for them
            data = {"status": "error", "message": str(exc) or type(exc).__name__}
        evaluation_store_result(pk, data)
    except Exception:  # never let a storage failure kill the executor's thread
        log.exception("could not store the result of evaluation %s", pk)
    finally:
        with _in_flight_lock:
            if _in_flight.get(pk) is future:
                del _in_flight[pk]
        connection.close()  # this pool thread may idle for long: don't hold a connection


def evaluation_store_result(pk: int, data: dict) -> None:
    """Store what the evaluator said: the headline facts in their columns, the rest in
    `result` (each fact once; `evaluation_result` composes the whole object again)."""
    failed = data.get("status") == "error"
    Evaluation.objects.filter(pk=pk, state__in=Evaluation.PENDING_STATES).update(
        state=Evaluation.State.ERROR if failed else Evaluation.State.DONE,
        result={key: value for key, value in data.items() if key not in HEADLINE},
        status=data.get("status", ""),
        reward=None if failed else data.get("reward"),
        speedup_vs_eager=data.get("speedup_vs_eager"),
        speedup_vs_compile=data.get("speedup_vs_compile"),
        coverage=data.get("coverage"), finished_at=timezone.now(),
    )


def evaluation_result(evaluation: Evaluation) -> dict | None:
    """What `python -m search_engine evaluate --json` printed for it, in the CLI's key order
    (None while pending): the stored rest with the headline columns put back. An `error`
    result is `{"status": "error", "message"}`, as the CLI prints it."""
    stored = evaluation.result
    if stored is None:
        return None
    if evaluation.state == Evaluation.State.ERROR:
        return {"status": evaluation.status, **stored}
    whole = {**stored, **{key: getattr(evaluation, key) for key in HEADLINE}}
    return {key: whole[key] for key in sorted(whole, key=_cli_position)}


def _cli_position(key: str) -> int:
    return CLI_KEYS.index(key) if key in CLI_KEYS else len(CLI_KEYS)


def evaluation_refresh(evaluation: Evaluation) -> Evaluation:
    """Collect a result the ledger holds, or notice work lost to a restart of this server."""
    if not evaluation.is_pending:
        return evaluation
    stored = placement.evaluation_stored(job_key(evaluation.pk))
    if stored is not None:
        evaluation_store_result(evaluation.pk, stored)
        evaluation.refresh_from_db()
    elif (placement.evaluations_run_here() and evaluation.submitted_at < _PROCESS_STARTED
          and evaluation.pk not in _in_flight):
        evaluation_store_result(evaluation.pk, {
            "status": "error",
            "message": "the server restarted before this evaluation finished; submit it again"})
        evaluation.refresh_from_db()
    return evaluation


def wait_for(pk: int, timeout: float | None = None):
    """Block until this process's evaluation `pk` is stored (tests, scripts)."""
    with _in_flight_lock:
        future = _in_flight.get(pk)
    if future is not None:
        future.result(timeout=timeout)
        # the done-callback runs right after the result is set; give it the GIL
        deadline = timezone.now().timestamp() + 10
        while pk in _in_flight and timezone.now().timestamp() < deadline:
            threading.Event().wait(0.01)
