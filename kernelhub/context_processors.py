from django.conf import settings
from django.utils.functional import SimpleLazyObject

from kernelhub import __version__


def kernelhub(request):
    def managed_teams():
        # Lazy: only pages that draw the navigation pay for the query.
        from kernelhub.teams.selectors import teams_managed_by

        user = getattr(request, "user", None)
        return teams_managed_by(user) if user is not None and user.is_authenticated else []

    return {"KERNELHUB_VERSION": __version__, "LLM_CONFIGURED": settings.LLM_CONFIGURED,
            "MANAGED_TEAMS": SimpleLazyObject(managed_teams)}
