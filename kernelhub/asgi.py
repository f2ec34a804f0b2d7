"""ASGI entry point: HTTP through Django, websockets through Channels.

Websocket routes come from `kernelhub.routing`; the stack checks the Origin against
ALLOWED_HOSTS and authenticates with the Django session. In front of everything, URLs
longer than KERNELHUB_MAX_URL_BYTES answer 414 (`kernelhub.http_limits`).
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelhub.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from django.conf import settings  # noqa: E402

from kernelhub.http_limits import MaxUrlLengthMiddleware, install_twisted_limits  # noqa: E402
from kernelhub.optimization.problem_services import coverage_checks_on_server_start  # noqa: E402
from kernelhub.routing import websocket_urlpatterns  # noqa: E402

install_twisted_limits(settings.KERNELHUB_MAX_URL_BYTES)
coverage_checks_on_server_start()

application = MaxUrlLengthMiddleware(ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
))
