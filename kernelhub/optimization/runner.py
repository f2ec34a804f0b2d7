"""The session runner: the bridge between a stored `SearchSession` and `search_engine`.

`run_session` (started by `kernelhub.placement`, in a thread here or on the Celery queue
`search`) first takes the session's lease: a second loop for the same session (a redelivered
message, a manual resume, the reaper) finds it held and does not start. It builds a
`SearchRunner` from the session (rebuilt from its stored nodes when it has any), records
every search event as `Candidate` rows and `SessionEvent`s, and obeys pause / resume /
cancel by polling the stored status while it renews the lease. When the search ends, the
best correct, untainted kernel is proposed for review and the steps that helped are
distilled into skills.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from kernelhub import placement
from kernelhub.optimization import ledger
from kernelhub.optimization.candidates import candidate_live_event, candidate_record
from kernelhub.optimization.events import publish_session_event
from kernelhub.optimization.models import SearchSession
from kernelhub.optimization.services import (
    session_add_llm_usage, session_check_offline_coverage, session_llm_outage,
    session_propose_best, session_set_status, candidate_record_created, candidate_record_result, session_record_best,
)
from search_engine.candidate import CandidateRecord

logger = logging.getLogger(__name__)

CONTROL_POLL_S = 0.25
TARGET_POLL_S = 2.0  # how often a loop waiting for its target looks again
LEASE_EVERY_TICKS = 4  # renew the lease (and the heartbeat) once a second

# Engine statuses that end a session, and what the stored session becomes.
TERMINAL = {"completed": SearchSession.Status.FINISHED, "failed": SearchSession.Status.FAILED,
            "cancelled": SearchSession.Status.CANCELLED}


# -- building the search from a session -----------------------------------------------------

def make_synthesizer(session: SearchSession):
    if session.synthesizer == SearchSession.SynthesizerKind.LLM:
        from search_engine.synthesis.endpoints import (
            make_llm_synthesizer, parse_models, unpriced_models,
        )
        from search_engine.synthesis.pricing import parse_prices

        if not settings.LLM_CONFIGURED:
            raise ValueError("the LLM synthesizer needs OPENAI_BASE_URL or OPENAI_API_KEY")
        # a session may name its own models (config "llm_models"), else the setting's
        models = parse_models((session.config or {}).get("llm_models") or settings.LLM_MODEL)
        prices = parse_prices(settings.KERNELHUB_LLM_PRICES)
        unpriced = unpriced_models(models, prices)
        if session.budget_cost_usd and unpriced:
            raise ValueError(f"a cost budget needs a price for {', '.join(unpriced)}: set "
                             "KERNELHUB_LLM_PRICES (MODEL=IN:OUT, USD per million tokens)")
        return make_llm_synthesizer(
            settings.OPENAI_BASE_URL or "https://api.openai.com/v1",
            [f"{m}@{u}" if u else m for m, u in models],
            api_key=settings.OPENAI_API_KEY or "none", prices=prices,
            timeout_s=settings.KERNELHUB_LLM_TIMEOUT_S,
            max_transport_retries=settings.KERNELHUB_LLM_RETRIES,
            backoff_s=settings.KERNELHUB_LLM_BACKOFF_S,
            context_tokens=settings.KERNELHUB_LLM_CONTEXT_TOKENS,
            max_answer_chars=settings.KERNELHUB_LLM_MAX_ANSWER_CHARS)
    from search_engine.synthesis.offline import OfflineSynthesizer

    return OfflineSynthesizer()


def make_context_provider(session: SearchSession):
    from knowledge.context import KnowledgeContextProvider

    return KnowledgeContextProvider(team_id=session.team_id)  # the team's and shared rows


def make_search_config(session: SearchSession):
    from search_engine.search import SearchConfig
    from search_engine.search.config import default_screen

    extra = {k: v for k, v in (session.config or {}).items()
             if k in ("children_per_step", "max_in_flight", "plateau_window", "plateau_epsilon",
                      "gamma", "context_k", "ordered", "policy_options", "outage_retry_s",
                      "outage_max_retry_s", "screen", "screen_finalists")}
    extra.setdefault("outage_retry_s", settings.KERNELHUB_LLM_OUTAGE_RETRY_S)
    extra.setdefault("screen", default_screen(session.hardware.is_interpreter))
    return SearchConfig(
        strategy=session.strategy, budget=session.budget_evaluations, seed=session.seed,
        max_seconds=session.budget_minutes * 60.0,
        max_cost_usd=session.budget_cost_usd or None,
        precision_policy=session.precision_policy,
        eval_timeout_s=settings.KERNELHUB_EVAL_TIMEOUT_S, family=session.problem.family,
        spent_cost_usd=session.llm_cost_usd, **extra,
    )


def stored_node_dicts(session: SearchSession) -> list[dict[str, Any]]:
    """The session's candidates as search_engine node dicts (see search_engine/search/tree.py)."""
    return [candidate_record(c, baselines=session.baseline if c.parent is None else None
                             ).to_node()
            for c in session.candidates.select_related("parent").order_by("id")]


# -- recording events -------------------------------------------------------------------------

class SessionRecorder:
    """The search's event callback: store rows, then publish a compact event."""

    def __init__(self, session: SearchSession):
        self.session = session
        self.pks: dict[int, int] = dict(
            (int(node_id), pk) for node_id, pk in session.candidates.values_list("node_id", "pk")
        )
        self.engine_status = ""

    def __call__(self, event: dict[str, Any]) -> None:
        handler = getattr(self, f"on_{event['type']}", None)
        if handler is not None:  # all of an event's rows or none, retried while the DB is away
            ledger.with_db_retry(lambda: self._atomically(handler, event["payload"]))

    @staticmethod
    def _atomically(handler, payload: dict) -> None:
        with transaction.atomic():
            handler(payload)

    def on_node_created(self, node: dict) -> None:
        parent_pk = self.pks.get(node["parent_id"]) if node.get("parent_id") is not None else None
        pk = candidate_record_created(session=self.session, node=node, parent_pk=parent_pk)
        self.pks[int(node["id"])] = pk
        publish_session_event(self.session, "node_created", self.compact(node, pk))

    def on_node_evaluated(self, node: dict) -> None:
        pk = self.pks.get(int(node["id"]))
        if pk is None:  # should not happen: every node is created before it is evaluated
            self.on_node_created(node)
            pk = self.pks[int(node["id"])]
        advantages = {self.pks[int(n)]: a for n, a in (node.get("advantages") or {}).items()
                      if int(n) in self.pks}
        candidate_record_result(session=self.session, candidate_pk=pk, node=node,
                                advantages=advantages)
        publish_session_event(self.session, "node_evaluated", self.compact(node, pk))

    def on_best_improved(self, best: dict) -> None:
        pk = self.pks.get(int(best["node_id"]))
        session_record_best(session=self.session, candidate_pk=pk, best=best)
        publish_session_event(self.session, "best_improved", {**best, "candidate_pk": pk})

    def on_synthesis_failed(self, payload: dict) -> None:
        """An expansion gave no candidate: its tokens and cost still count."""
        session_add_llm_usage(self.session, payload.get("usage") or {})

    def on_status_changed(self, payload: dict) -> None:
        # Pause and resume were already stored and published by the service that asked
        # for them; the engine's start, its end and its outage pauses are recorded here.
        self.engine_status = payload.get("status", "")
        if payload.get("outage"):
            session_llm_outage(self.session, payload["outage"], payload.get("reason", ""))
            return
        if payload.get("outage_over"):
            session_llm_outage(self.session, None, payload.get("reason", ""))
            return
        if self.engine_status == "running" and self.session.status != SearchSession.Status.RUNNING:
            self.session.refresh_from_db(fields=["status"])
            if self.session.status == SearchSession.Status.QUEUED:
                session_set_status(self.session, SearchSession.Status.RUNNING, "started")

    def on_log(self, payload: dict) -> None:
        publish_session_event(self.session, "log", payload)

    def compact(self, node: dict, pk: int) -> dict:
        """What the live page needs of a node (sources and full results stay in the rows)."""
        counts = SearchSession.objects.values(
            "evaluated_count", "budget_evaluations", "screened_count").get(pk=self.session.pk)
        return candidate_live_event(
            CandidateRecord.from_node(node), pk, advantages=node.get("advantages") or {},
            evaluated=counts["evaluated_count"], budget=counts["budget_evaluations"],
            screened=counts["screened_count"])


# -- the loop -----------------------------------------------------------------------------------

class ControlWatcher(threading.Thread):
    """Mirror the stored status onto the engine (pause, resume, cancel) and renew the lease
    (with the heartbeat). A lease taken by another loop stops this one: `lost` is set."""

    def __init__(self, session_id: int, runner, owner: str):
        super().__init__(daemon=True, name=f"kernelhub-control-{session_id}")
        self.session_id = session_id
        self.runner = runner
        self.owner = owner
        self.stop = threading.Event()
        self.lost = threading.Event()
        self.ticks = 0

    def run(self) -> None:
        try:
            while not self.stop.wait(CONTROL_POLL_S):
                try:
                    self.tick()
                except Exception:  # the database away for a moment: the lease outlives it
                    logger.exception("control tick of session %s failed", self.session_id)
                    close_old_connections()
        finally:
            connection.close()

    def tick(self) -> None:
        close_old_connections()
        if self.ticks % LEASE_EVERY_TICKS == 0:
            self.renew()
        self.ticks += 1
        if self.runner is None:  # still building the search
            return
        status, outage = SearchSession.objects.values_list("status", "llm_outage").get(
            pk=self.session_id)
        if status == SearchSession.Status.PAUSED and outage:
            pass  # the loop paused itself for an endpoint outage and resumes by itself
        elif status == SearchSession.Status.PAUSED:
            self.runner.pause()
        elif status == SearchSession.Status.RUNNING:
            self.runner.resume()
        elif status in (SearchSession.Status.CANCELLED, SearchSession.Status.FAILED):
            self.runner.cancel()

    def renew(self) -> None:
        if not ledger.lease_renew(self.session_id, self.owner):
            logger.warning("session %s: another loop took the lease; stopping", self.session_id)
            self.lost.set()
            if self.runner is not None:
                self.runner.cancel()
            return
        SearchSession.objects.filter(pk=self.session_id).update(heartbeat_at=timezone.now())


def run_session(session_id: int) -> None:
    """Run the session's loop here, unless another loop holds its lease."""
    session = SearchSession.objects.select_related("problem", "hardware", "team").get(pk=session_id)
    owner = ledger.loop_owner()
    if not session.is_active or not ledger.lease_acquire(session_id, owner):
        logger.info("session %s: not active or run by another loop; not starting", session_id)
        return
    executor = placement.evaluation_executor(session_id)
    try:
        _run_leased(session, executor, owner)
    finally:
        executor.shutdown()
        ledger.lease_release(session_id, owner)


def _run_leased(session: SearchSession, executor, owner: str) -> None:
    watcher = ControlWatcher(session.pk, None, owner)  # renews the lease while building, too
    watcher.start()
    try:
        if not session_check_offline_coverage(session) or not wait_for_target(session, watcher):
            return
        try:
            watcher.runner = build_runner(session, executor)
        except Exception as exc:  # a bad configuration ends the session with a reason
            logger.exception("session %s could not start", session.pk)
            session_set_status(session, SearchSession.Status.FAILED, f"could not start: {exc}")
            return
        if watcher.lost.is_set():
            return
        outcome = watcher.runner.run()
    finally:
        watcher.stop.set()
        watcher.join(2)
    if not watcher.lost.is_set():
        finish_session(session, outcome)


def wait_for_target(session: SearchSession, watcher: ControlWatcher) -> bool:
    """Embedded default: wait (saying so) while this server cannot run the session's target,
    instead of failing every candidate for want of a GPU; False when the session ended or
    another loop took it meanwhile. (Distributed loops queue their evaluations on
    `gpu.<target>`, where they wait for a worker.)"""
    if not placement.evaluations_run_here():
        return True
    from kernelhub.optimization.session_state import session_state

    said = ""
    while not placement.local_target_served(session.hardware.name):
        session.refresh_from_db()
        if not session.is_active or watcher.lost.is_set():
            return False
        state = session_state(session)
        if state.state == "waiting_for_worker" and state.detail != said:
            said = state.detail
            session_set_status(session, session.status, said)
        watcher.stop.wait(TARGET_POLL_S)
    return True


def build_runner(session: SearchSession, executor):
    from search_engine.search import SearchRunner

    recorder = SessionRecorder(session)
    common = dict(
        target=session.hardware.name, synthesizer=make_synthesizer(session),
        executor=executor, config=make_search_config(session),
        context=make_context_provider(session), on_event=recorder,
        session=str(session.pk),
    )
    nodes = stored_node_dicts(session)
    if nodes:
        return SearchRunner.from_nodes(nodes, session.problem.source, **common)
    return SearchRunner(session.problem.source, **common)


def finish_session(session: SearchSession, outcome) -> None:
    SearchSession.objects.filter(pk=session.pk).exclude(llm_outage={}).update(llm_outage={})
    session.refresh_from_db()
    if session.status == SearchSession.Status.CANCELLED:
        final, reason = session.status, session.status_message or outcome.reason
    else:
        final, reason = TERMINAL.get(outcome.status, SearchSession.Status.FINISHED), outcome.reason
    if session.is_active:
        session_set_status(session, final, reason)
    session_propose_best(session)
    record_skill_use(session, outcome)
    distill_skills(session, outcome)


def record_skill_use(session: SearchSession, outcome) -> None:
    """Score the skills that shaped this session's nodes (finished or cancelled alike)."""
    from knowledge.services import session_record_skill_use

    try:
        session_record_skill_use(session, outcome.nodes)
    except Exception:  # scoring is bookkeeping; never fail a finished session over it
        logger.exception("recording skill use failed for session %s", session.pk)


def distill_skills(session: SearchSession, outcome) -> None:
    from knowledge.services import distill_session_skills

    nodes = [skill_node(node, session) for node in outcome.nodes]
    try:
        distill_session_skills(nodes, session_id=session.pk, team=session.team)
    except Exception:  # skills are a bonus; never fail a finished session over them
        logger.exception("skill distillation failed for session %s", session.pk)


def skill_node(node: dict, session: SearchSession) -> dict:
    """A node in the shape `knowledge.services.distill_session_skills` reads."""
    record = CandidateRecord.from_node(node)
    return {
        **node,
        "diagnostics": {"bottleneck": record.bottleneck or None},
        "integrity_flags": record.integrity_flags,
        "family": session.problem.family, "hardware": session.hardware.name,
        "session": session.pk,
    }
