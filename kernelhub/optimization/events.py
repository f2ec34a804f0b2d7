"""The one helper through which services publish session events.

Each event is stored as a `SessionEvent` row with the next sequence number (so a page
opened mid-session replays exactly what it missed), then sent to the session's channel
group: in-process in the embedded default, through Redis in the distributed mode.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction
from django.db.models import F

from kernelhub.optimization.models import SearchSession, SessionEvent

logger = logging.getLogger(__name__)


# The in-memory layer's queues belong to the server's event loop and are not thread-safe:
# runner threads must hand their sends to that loop (consumers register it on connect).
_server_loop: asyncio.AbstractEventLoop | None = None


def register_event_loop(loop: asyncio.AbstractEventLoop) -> None:
    global _server_loop
    _server_loop = loop


def session_group_name(session_id: int) -> str:
    return f"session-{session_id}"


def event_to_message(event: SessionEvent) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "type": event.type,
        "payload": event.payload,
        "ts": event.created_at.isoformat(),
    }


def publish_session_event(session: SearchSession, event_type: str, payload: dict) -> SessionEvent:
    with transaction.atomic():
        SearchSession.objects.filter(pk=session.pk).update(last_seq=F("last_seq") + 1)
        seq = SearchSession.objects.values_list("last_seq", flat=True).get(pk=session.pk)
        event = SessionEvent.objects.create(
            session_id=session.pk, seq=seq, type=event_type, payload=payload
        )
    session.last_seq = seq
    transaction.on_commit(lambda: _broadcast(session.pk, event))
    return event


def _broadcast(session_id: int, event: SessionEvent) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    group = session_group_name(session_id)
    message = {"type": "session.event", "event": event_to_message(event)}
    try:
        loop = _server_loop
        if (isinstance(layer, InMemoryChannelLayer) and loop is not None and loop.is_running()
                and not _running_on(loop)):
            asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
        else:
            async_to_sync(layer.group_send)(group, message)
    except Exception:  # a dead broker must not kill the search; the page catches up by seq
        logger.exception("could not broadcast event %s of session %s", event.seq, session_id)


def _running_on(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
