"""Schemathesis against /api/schema/: generated requests (with a read-write key) never
get a server error, and documented responses match the schema."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance, response_schema_conformance,
)

CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]


def load_schema():
    from django.core.wsgi import get_wsgi_application

    # Loaded at collection (no database needed to describe the API).
    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    # Hybrid search loads the embedding model; it has its own tests (test_rest, knowledge/).
    return schema.exclude(path="/api/v1/knowledge/search")


schema = load_schema()


@pytest.fixture
def keep_test_connection():
    """Calls go through the WSGI app, whose request signals would close the test's database
    connection (and its transaction) on PostgreSQL; Django's own test client does the same."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def no_session_runner(monkeypatch):
    from kernelhub import placement

    # Sessions it manages to create are recorded but not run (the runner is tested elsewhere).
    monkeypatch.setattr(placement, "session_launch", lambda session_id: None)


@schema.parametrize()
@settings(max_examples=3, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
@pytest.mark.django_db
def test_api_conforms_to_its_schema(case, workspace, api_keys, no_session_runner,
                                    keep_test_connection):
    # identity: the WSGI client does not undo the gzip real clients get (transport, not schema)
    case.call_and_validate(headers={"Authorization": f"Api-Key {api_keys[('alpha', 'write')]}",
                                    "Accept-Encoding": "identity"},
                           checks=CHECKS)
