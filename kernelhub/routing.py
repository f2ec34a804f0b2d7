"""Websocket routes (wrapped by the origin check and session auth in `kernelhub.asgi`)."""

from django.urls import path

from kernelhub.optimization.consumers import SessionConsumer

websocket_urlpatterns = [
    path("ws/sessions/<int:session_id>/", SessionConsumer.as_asgi()),
]
