"""What every API view shares: auth, permissions, per-key throttling, error mapping."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.views import exception_handler as drf_exception_handler

from kernelhub.api.authentication import ApiKeyAuthentication
from kernelhub.api.permissions import DEFAULT_PERMISSIONS
from kernelhub.api.throttling import PerKeyRateThrottle


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state of the resource."
    default_code = "conflict"


def exception_handler(exc, context):
    """DRF's handler, plus Django's ValidationError (what services raise) as a 400; a
    service error that names a conflict (e.g. an already-approved kernel) as a 409."""
    from kernelhub.review.services import KernelAlreadyApproved

    if isinstance(exc, KernelAlreadyApproved):
        exc = Conflict(detail=" ".join(exc.messages), code=KernelAlreadyApproved.code)
        response = drf_exception_handler(exc, context)
        response.data = {"detail": str(exc.detail), "code": KernelAlreadyApproved.code}
        return response
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "message_dict"):
            exc = exceptions.ValidationError(exc.message_dict)
        else:
            exc = exceptions.ValidationError({"detail": exc.messages})
    return drf_exception_handler(exc, context)


class ApiViewMixin:
    # ApiKeyAuthentication first: its WWW-Authenticate header turns "not signed in" into 401.
    authentication_classes = [ApiKeyAuthentication, SessionAuthentication]
    permission_classes = DEFAULT_PERMISSIONS
    throttle_classes = [PerKeyRateThrottle]
    throttle_scope = "api"

    def get_exception_handler(self):
        return exception_handler


class IgnoreAcceptHeader(BaseContentNegotiation):
    """Downloads and feeds (CSV, ZIP, .py, JSON Lines, OData) answer whatever Accept says."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type
