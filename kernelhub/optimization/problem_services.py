"""Writes for hardware targets and problems: a problem is validated in the sandbox before
it is stored, and whether the offline synthesizer covers it is computed once per source in
the background (and stored on the problem)."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from kernelhub import placement
from kernelhub.optimization.models import HardwareTarget, Problem
from kernelhub.teams.models import Team
from kernelhub.teams.selectors import user_can
from search_engine.hardware import TARGETS
from search_engine.problem_check import ProblemInvalid, check_problem

MAX_PROBLEM_BYTES = 200_000
# A coverage request that did not finish in this long (a lost worker, a restarted server)
# is made again by the next page that shows the problem.
COVERAGE_REQUEST_STALE_S = 300
# "unknown" (the sandbox timed out or could not start) is asked again after this long.
COVERAGE_UNKNOWN_RETRY_S = 3600

logger = logging.getLogger(__name__)
# One analysis per problem at a time in this process: a session's loop that needs the answer
# waits for the background check already running instead of starting a second sandbox.
_coverage_locks: defaultdict[int, threading.Lock] = defaultdict(threading.Lock)


def hardware_targets_sync() -> list[HardwareTarget]:
    """Create or refresh the known targets from search_engine's table."""
    rows = []
    for target in TARGETS.values():
        row, _ = HardwareTarget.objects.update_or_create(
            name=target.name,
            defaults={
                "display_name": target.name.upper() if target.name != "interpreter"
                else "Interpreter (CPU)",
                "vendor": target.vendor,
                "architecture": target.architecture,
                "memory_bandwidth_gbs": target.memory_bandwidth_gbs,
                "fp32_tflops": target.fp32_tflops,
                "bf16_tflops": target.bf16_tflops,
                "multiprocessors": target.multiprocessors,
                "l2_bytes": target.l2_bytes,
                "shared_memory_per_block_bytes": target.shared_memory_per_block_bytes,
                "ceilings_source": target.source,
                "notes": target.notes,
            },
        )
        rows.append(row)
    return rows


def problem_create(
    *,
    name: str,
    source: str,
    team: Team | None,
    user: AbstractBaseUser | None = None,
    family: str = "",
    description: str = "",
    validate_timeout_s: float = 30.0,
    request_offline_coverage: bool = True,
) -> Problem:
    """Validate a KernelBench problem (statically, then by running it in the sandbox) and
    store it; its offline coverage is then computed in the background (once the row is
    committed) unless `request_offline_coverage` is False (then the first page showing it
    asks).

    `team=None` makes a library problem (demo data, staff only)."""
    if team is not None and user is not None and not user_can(user, team, "upload"):
        raise PermissionDenied("Only engineers and admins of the team upload problems.")
    name = (name or "").strip()
    if not name:
        raise ValidationError("Give the problem a name.")
    if len(source.encode()) > MAX_PROBLEM_BYTES:
        raise ValidationError(f"The problem file is larger than {MAX_PROBLEM_BYTES // 1000} kB.")
    if Problem.objects.filter(team=team, name=name).exists():
        raise ValidationError(f"A problem named {name!r} already exists in this team.")
    try:
        info = check_problem(source, timeout_s=validate_timeout_s)
    except ProblemInvalid as exc:
        raise ValidationError(str(exc)) from exc
    problem = Problem.objects.create(
        team=team,
        name=name,
        family=family.strip(),
        description=description,
        source=source,
        source_sha256=hashlib.sha256(source.encode()).hexdigest(),
        dtype=info.dtype,
        created_by=user,
    )
    if request_offline_coverage:
        problem_offline_coverage_request(problem)
    return problem


def problem_offline_coverage_request(problem: Problem) -> bool:
    """Ask for the problem's offline coverage in the background, at most once at a time.

    Returns whether a computation was queued (False: it is ready, or already asked for)."""
    now = timezone.now()
    if _coverage_current(problem, now):
        return False
    claimed = Problem.objects.filter(pk=problem.pk).filter(
        Q(offline_coverage_requested_at__isnull=True)
        | Q(offline_coverage_requested_at__lt=now - timedelta(seconds=COVERAGE_REQUEST_STALE_S))
    ).update(offline_coverage_requested_at=now)
    if not claimed:
        return False
    problem.offline_coverage_requested_at = now
    placement.problem_coverage(problem.pk)
    return True


def problems_offline_coverage_request_pending(problems: QuerySet | None = None) -> int:
    """Ask for the coverage of every problem (of `problems`, default all) that has no answer
    for its current source, so checks start without anyone opening the problem; a check
    already asked for (and not stale) is left alone. Returns how many were queued."""
    pending = (Problem.objects.all() if problems is None else problems).filter(
        Q(offline_coverage_state=Problem.Coverage.PENDING)
        | ~Q(offline_coverage_sha256=F("source_sha256")))
    return sum(problem_offline_coverage_request(problem) for problem in pending)


def problems_offline_coverage_resume() -> int:
    """The embedded server starts: checks a previous run of it had asked for died with it;
    ask again for every problem without an answer (and queue the ones never asked)."""
    Problem.objects.filter(offline_coverage_state=Problem.Coverage.PENDING).exclude(
        offline_coverage_requested_at=None).update(offline_coverage_requested_at=None)
    return problems_offline_coverage_request_pending()


def coverage_checks_on_server_start() -> None:
    """The web server process starts. In the embedded default it is where background work
    runs: the problems' coverage checks start now (in a thread: the server does not wait),
    not when someone first opens a problem. Distributed workers sweep for them instead."""
    if settings.KERNELHUB_COVERAGE_CHECKS_ON_START and placement.mode() == "embedded":
        threading.Thread(target=_resume_coverage_checks, daemon=True,
                         name="kernelhub-coverage-resume").start()


def _resume_coverage_checks() -> None:
    try:
        logger.info("coverage checks asked for %d problems", problems_offline_coverage_resume())
    except Exception:  # no database yet (before `migrate`): the pages ask later
        logger.exception("could not ask for the problems' coverage checks")
    finally:
        connection.close()


def problem_offline_coverage_compute(problem: Problem | int, *, force: bool = False) -> Problem:
    """Compute the offline coverage (the analysis runs in the sandbox) and store it.

    What the background task runs; also an offline session whose problem was
    never checked (its loop, before searching). Skips problems whose stored coverage is for
    their current source; waits for a check of the same problem already running here."""
    problem_id = problem.pk if isinstance(problem, Problem) else problem
    with _coverage_locks[problem_id]:
        problem = Problem.objects.get(pk=problem_id)  # what a check that just ended stored
        if not force and _coverage_current(problem, timezone.now()):
            return problem
        return _coverage_compute_and_store(problem)


def _coverage_compute_and_store(problem: Problem) -> Problem:
    sha = problem.source_sha256
    found = offline_coverage_of_source(problem.source)
    fields = {
        "offline_coverage_state": found["state"],
        "offline_coverage_detail": found["detail"][:4000],
        "offline_coverage_family": (found.get("family") or "")[:32],
        "offline_coverage_ops": list(found.get("ops") or [])[:200],
        "offline_coverage_plan": found.get("plan") or {},
        "offline_coverage_sha256": sha,
        "offline_coverage_computed_at": timezone.now(),
    }
    # Only for the source it was computed from (an edit in between wins).
    Problem.objects.filter(pk=problem.pk, source_sha256=sha).update(**fields)
    for name, value in fields.items():
        setattr(problem, name, value)
    return problem


def _coverage_current(problem: Problem, now) -> bool:
    if not problem.offline_coverage_ready:
        return False
    return not (problem.offline_coverage_state == Problem.Coverage.UNKNOWN
                and problem.offline_coverage_computed_at is not None
                and now - problem.offline_coverage_computed_at
                > timedelta(seconds=COVERAGE_UNKNOWN_RETRY_S))


def offline_coverage_of_source(source: str) -> dict:
    """{"state": "covered" | "uncovered" | "unknown", "detail", "family"?, "ops"?, "plan"?}
    ("plan": the kernel plan's dict, its kernels or what is refused and why).

    The synthesizer's analysis runs the problem in the sandbox; this process only reads its
    checked JSON answer. Never raises."""
    from search_engine.synthesis.base import NotCoveredError
    from search_engine.synthesis.offline import OfflineSynthesizer
    from search_engine.synthesis.offline.frontend.json_io import CoverageUnknown
    from search_engine.synthesis.offline.plan.kernel_plan import refused_plan

    synthesizer = OfflineSynthesizer()
    try:
        family = synthesizer.check_covered(source)
        plan = synthesizer.kernel_plan(source)  # the analysis just made: nothing runs again
    except CoverageUnknown as exc:
        return {"state": "unknown", "detail": str(exc)}
    except NotCoveredError as exc:
        return {"state": "uncovered", "detail": str(exc), "ops": exc.ops,
                "plan": refused_plan(exc).to_dict()}
    except Exception as exc:  # a bug in the analysis: say so, never fail the caller
        logger.warning("offline coverage check failed: %s", exc)
        return {"state": "unknown", "detail": f"coverage unknown: {type(exc).__name__}: {exc}"}
    return {"state": "covered", "detail": f"covered (template family: {family})",
            "family": family, "plan": plan.to_dict()}
