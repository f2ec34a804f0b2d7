"""The live-session websocket through the real ASGI stack (origin check + session auth)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from kernelhub.asgi import application
from kernelhub.optimization.consumers import SessionConsumer
from kernelhub.optimization.events import publish_session_event
from kernelhub.optimization.models import SearchSession

# one xdist worker for every test on the shared Redis (database 0): they read each other's keys
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("shared-redis")]


@pytest.fixture
def alpha_session(teams, hardware, library_problem):
    return SearchSession.objects.create(
        team=teams["alpha"], problem=library_problem, hardware=hardware["interpreter"],
        created_by=teams["users"][("alpha", "engineer")],
    )


def session_cookie(username: str | None, password: str | None) -> bytes:
    client = Client()
    if username:
        assert client.login(username=username, password=password)
        name = settings.SESSION_COOKIE_NAME
        return f"{name}={client.cookies[name].value}".encode()
    return b""


async def open_socket(session_id: int, username=None, password=None, after=None,
                      origin=b"http://testserver"):
    cookie = await database_sync_to_async(session_cookie)(username, password)
    headers = [(b"origin", origin), (b"host", b"testserver")]
    if cookie:
        headers.append((b"cookie", cookie))
    path = f"/ws/sessions/{session_id}/" + (f"?after={after}" if after is not None else "")
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect(timeout=5)
    return communicator, connected, code


async def receive_events(communicator, count: int, timeout: float = 3.0) -> list[dict]:
    events: list[dict] = []
    while len(events) < count:
        frame = await communicator.receive_json_from(timeout=timeout)
        events.extend(frame["events"])
    return events


async def publish(session, event_type: str, payload: dict):
    return await database_sync_to_async(publish_session_event)(session, event_type, payload)


async def test_member_receives_replay_then_live_events_in_order(alpha_session):
    for i in range(3):
        await publish(alpha_session, "log", {"message": f"stored {i}"})
    ws, connected, _ = await open_socket(alpha_session.pk, "alpha-viewer", "pw-viewer")
    assert connected
    replay = await receive_events(ws, 3)
    assert [e["seq"] for e in replay] == [1, 2, 3]
    assert replay[0]["payload"] == {"message": "stored 0"} and replay[0]["type"] == "log"
    for i in range(20):
        await publish(alpha_session, "node_created", {"node_id": f"n{i}"})
    live = await receive_events(ws, 20)
    assert [e["seq"] for e in live] == list(range(4, 24))
    assert [e["payload"]["node_id"] for e in live] == [f"n{i}" for i in range(20)]
    await ws.disconnect()


async def test_bursts_are_coalesced_into_few_frames(alpha_session):
    ws, connected, _ = await open_socket(alpha_session.pk, "alpha-engineer", "pw-engineer")
    assert connected
    assert await ws.receive_nothing(timeout=0.1)
    await database_sync_to_async(
        lambda: [publish_session_event(alpha_session, "log", {"i": i}) for i in range(60)])()
    frames, seqs = 0, []
    while len(seqs) < 60:
        frame = await ws.receive_json_from(timeout=3)
        frames += 1
        seqs += [e["seq"] for e in frame["events"]]
    assert seqs == list(range(1, 61))
    assert frames < 60, "a burst must not be sent one frame per event"
    await ws.disconnect()


async def test_reconnect_with_after_replays_only_what_was_missed(alpha_session):
    ws, connected, _ = await open_socket(alpha_session.pk, "alpha-viewer", "pw-viewer")
    assert connected
    for i in range(5):
        await publish(alpha_session, "log", {"i": i})
    first = await receive_events(ws, 5)
    await ws.disconnect()
    last_seq = first[-1]["seq"]
    for i in range(5, 9):  # published while the page was disconnected
        await publish(alpha_session, "log", {"i": i})
    ws, connected, _ = await open_socket(alpha_session.pk, "alpha-viewer", "pw-viewer",
                                         after=last_seq)
    assert connected
    missed = await receive_events(ws, 4)
    assert [e["seq"] for e in missed] == [6, 7, 8, 9]
    await publish(alpha_session, "log", {"i": 9})
    assert [e["seq"] for e in await receive_events(ws, 1)] == [10]
    assert await ws.receive_nothing(timeout=0.2)
    await ws.disconnect()


async def test_dropped_group_messages_are_filled_from_the_database(alpha_session):
    ws, connected, _ = await open_socket(alpha_session.pk, "alpha-viewer", "pw-viewer")
    assert connected
    # Stored but never broadcast (as if the channel layer dropped them).
    from kernelhub.optimization.models import SessionEvent

    for seq in (1, 2):
        await database_sync_to_async(SessionEvent.objects.create)(
            session=alpha_session, seq=seq, type="log", payload={"lost": seq})
    await database_sync_to_async(
        SearchSession.objects.filter(pk=alpha_session.pk).update)(last_seq=2)
    await publish(alpha_session, "log", {"lost": False})
    events = await receive_events(ws, 3)
    assert [e["seq"] for e in events] == [1, 2, 3]
    # A periodic catch-up delivers trailing events nobody broadcast.
    await database_sync_to_async(SessionEvent.objects.create)(
        session=alpha_session, seq=4, type="log", payload={"lost": 4})
    await ws.send_json_to({"action": "catchup"})
    assert [e["seq"] for e in await receive_events(ws, 1)] == [4]
    await ws.disconnect()


@pytest.mark.parametrize("username,password", [
    (None, None), ("beta-admin", "pw-admin"), ("beta-viewer", "pw-viewer")])
async def test_anonymous_and_other_teams_are_refused(alpha_session, username, password):
    ws, connected, code = await open_socket(alpha_session.pk, username, password)
    assert not connected and code == 4403
    await ws.disconnect()


async def test_unknown_session_is_refused(alpha_session):
    ws, connected, _ = await open_socket(alpha_session.pk + 999, "alpha-admin", "pw-admin")
    assert not connected
    await ws.disconnect()


async def test_foreign_origin_is_refused(alpha_session):
    ws, connected, _ = await open_socket(alpha_session.pk, "alpha-admin", "pw-admin",
                                         origin=b"http://evil.example.com")
    assert not connected
    await ws.disconnect()


def test_throttle_interval_is_short_enough_for_live_updates():
    assert 0 < SessionConsumer.FLUSH_INTERVAL_S <= 0.1


@pytest.mark.redis
async def test_stream_through_the_redis_channel_layer(alpha_session, redis_url, settings):
    """The distributed mode: workers publish through Redis, the consumer relays in order."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": [redis_url],
                                                      "prefix": "kernelhub-test-ui"}}}
    from channels.layers import get_channel_layer

    assert type(get_channel_layer()).__name__ == "RedisChannelLayer"
    ws, connected, _ = await open_socket(alpha_session.pk, "alpha-viewer", "pw-viewer")
    assert connected
    for i in range(5):
        await publish(alpha_session, "node_evaluated", {"node_id": str(i)})
    events = await receive_events(ws, 5)
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5]
    await ws.disconnect()
