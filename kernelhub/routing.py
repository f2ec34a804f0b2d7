"""Websocket routes. The live-session consumer is added by the dashboard."""

websocket_urlpatterns: list = []
