"""The live-session websocket: replay what the page missed, then stream, throttled.

Protocol (server → client): `{"events": [{seq, type, payload, ts}, ...], "sent_ms": epoch ms}`
in seq order,
coalesced so a burst reaches the browser as one frame per FLUSH_INTERVAL_S. The client
connects with `?after=<last seq it holds>` and may send `{"action": "catchup"}` at any time
(it does so periodically) to receive stored events the stream has not delivered yet.

Ordering without gaps or duplicates: the consumer joins the group *before* reading the
stored events, remembers the highest seq it has sent, drops group messages at or below it,
and fills any hole (a message the channel layer dropped) from the database.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from kernelhub.optimization.events import (
    event_to_message,
    register_event_loop,
    session_group_name,
)
from kernelhub.optimization.models import SearchSession, SessionEvent
from kernelhub.teams.selectors import user_can

CLOSE_FORBIDDEN = 4403
REPLAY_BATCH = 500


class SessionConsumer(AsyncJsonWebsocketConsumer):
    FLUSH_INTERVAL_S = 0.05

    async def connect(self) -> None:
        self.session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        if not await self._may_view(self.scope.get("user"), self.session_id):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.group = session_group_name(self.session_id)
        self.last_sent = _after_from_query(self.scope.get("query_string", b""))
        self.pending: list[dict] = []
        self.last_flush = 0.0
        self.flush_task: asyncio.Task | None = None
        await self.channel_layer.group_add(self.group, self.channel_name)
        register_event_loop(asyncio.get_running_loop())
        await self.accept()
        await self._catch_up()

    async def disconnect(self, code: int) -> None:
        if getattr(self, "flush_task", None) is not None:
            self.flush_task.cancel()
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs) -> None:
        if isinstance(content, dict) and content.get("action") == "catchup":
            await self._catch_up()

    async def session_event(self, message: dict) -> None:
        """A group message from `publish_session_event` (same process or through Redis)."""
        event = message["event"]
        newest = self._newest_known()
        if event["seq"] <= newest:
            return
        if event["seq"] > newest + 1:  # the layer dropped something: take it from the database
            await self._queue(await self._stored_events(newest, before=event["seq"]))
        await self._queue([event])

    # --- internals -------------------------------------------------------------------------

    def _newest_known(self) -> int:
        return self.pending[-1]["seq"] if self.pending else self.last_sent

    async def _catch_up(self) -> None:
        """Send every stored event newer than what went out, right away (not throttled)."""
        if self.pending:
            await self._flush()
        while True:
            events = await self._stored_events(self.last_sent, limit=REPLAY_BATCH)
            await self._send_now(events)
            if len(events) < REPLAY_BATCH:
                break

    async def _queue(self, events: list[dict]) -> None:
        if not events:
            return
        self.pending.extend(events)
        wait = self.last_flush + self.FLUSH_INTERVAL_S - time.monotonic()
        if wait <= 0 and self.flush_task is None:
            await self._flush()
        elif self.flush_task is None:
            self.flush_task = asyncio.ensure_future(self._flush_later(wait))

    async def _flush_later(self, wait: float) -> None:
        await asyncio.sleep(wait)
        await self._flush()

    async def _flush(self) -> None:
        if self.flush_task is not None and self.flush_task is not asyncio.current_task():
            self.flush_task.cancel()
        self.flush_task = None
        events, self.pending = self.pending, []
        await self._send_now(events)

    async def _send_now(self, events: list[dict]) -> None:
        events = sorted({e["seq"]: e for e in events}.values(), key=lambda e: e["seq"])
        if not events:
            return
        self.last_flush = time.monotonic()
        self.last_sent = max(self.last_sent, events[-1]["seq"])
        await self.send_json({"events": events, "sent_ms": round(time.time() * 1000, 1)})

    @database_sync_to_async
    def _may_view(self, user, session_id: int) -> bool:
        if user is None or not user.is_authenticated:
            return False
        session = SearchSession.objects.select_related("team").filter(pk=session_id).first()
        return session is not None and user_can(user, session.team, "view")

    @database_sync_to_async
    def _stored_events(self, after: int, before: int | None = None,
                       limit: int | None = None) -> list[dict]:
        rows = SessionEvent.objects.filter(session_id=self.session_id, seq__gt=after)
        if before is not None:
            rows = rows.filter(seq__lt=before)
        rows = rows.order_by("seq")
        if limit:
            rows = rows[:limit]
        return [event_to_message(e) for e in rows]


def _after_from_query(query_string: bytes) -> int:
    values = parse_qs(query_string.decode("latin-1")).get("after", ["0"])
    try:
        return max(int(values[0]), 0)
    except ValueError:
        return 0
