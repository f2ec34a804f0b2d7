"""Over-long URLs answer 414 instead of a dropped connection.

Two layers, because Daphne's HTTP parser (Twisted) refuses a request line longer than its
line limit (16 KiB) by closing the socket before any application sees the request:

* `MaxUrlLengthMiddleware`, ASGI middleware in front of Django (kernelhub/asgi.py): a
  request whose target (path + query string) is longer than `KERNELHUB_MAX_URL_BYTES`
  (default 8 KiB) gets 414 with a JSON message, before Django parses anything.
* `install_twisted_limits()`: Twisted's line limit is raised above that setting (so such
  requests reach the middleware), and a line that is still too long is answered with
  414 (request line) or 431 (header line) before the connection closes, not dropped.
"""

from __future__ import annotations

import json

DEFAULT_MAX_URL_BYTES = 8 * 1024
HEADROOM_BYTES = 8 * 1024  # headers beside a maximal URL still fit Twisted's total limit


def url_too_long_body(limit: int) -> bytes:
    return json.dumps({
        "error": {"code": "URITooLong",
                  "message": f"The URL is longer than {limit} bytes (path and query string). "
                             "Send a shorter query: fewer or shorter $filter terms, or POST "
                             "the data instead."},
        "detail": f"URL longer than {limit} bytes.",
    }).encode()


class MaxUrlLengthMiddleware:
    def __init__(self, app, max_bytes: int | None = None):
        self.app = app
        self.max_bytes = max_bytes

    def limit(self) -> int:
        if self.max_bytes is not None:
            return self.max_bytes
        from django.conf import settings

        return int(getattr(settings, "KERNELHUB_MAX_URL_BYTES", DEFAULT_MAX_URL_BYTES))

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            limit = self.limit()
            path = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "replace")
            query = scope.get("query_string") or b""
            length = len(path) + (len(query) + 1 if query else 0)
            if length > limit:
                if scope["type"] == "websocket":
                    await receive()  # websocket.connect; closing before accept rejects it
                    await send({"type": "websocket.close", "code": 1009})
                    return
                body = url_too_long_body(limit)
                await send({"type": "http.response.start", "status": 414, "headers": [
                    (b"content-type", b"application/json; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def install_twisted_limits(max_url_bytes: int) -> None:
    """Let Daphne pass URLs up to `max_url_bytes` to the app, and answer longer lines."""
    from twisted.web import http

    channel = http.HTTPChannel
    line_limit = max(channel.MAX_LENGTH, max_url_bytes + HEADROOM_BYTES)
    channel.MAX_LENGTH = line_limit
    channel.totalHeadersSize = max(channel.totalHeadersSize, line_limit + HEADROOM_BYTES)
    if getattr(channel, "_kernelhub_line_limit", False):
        return

    def lineLengthExceeded(self, line):
        # Twisted would drop the connection silently; say why first.
        first_line = getattr(self, "_HTTPChannel__first_line", 1)
        if first_line:
            body = url_too_long_body(max_url_bytes)
            head = b"HTTP/1.1 414 URI Too Long\r\n"
        else:
            body = json.dumps({"detail": "A request header is too long."}).encode()
            head = b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
        self.transport.write(head + b"Content-Type: application/json; charset=utf-8\r\n"
                             + b"Content-Length: " + str(len(body)).encode() + b"\r\n"
                             + b"Connection: close\r\n\r\n" + body)
        self.loseConnection()

    channel.lineLengthExceeded = lineLengthExceeded
    channel._kernelhub_line_limit = True
