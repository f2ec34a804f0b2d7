from django.conf import settings

from kernelhub import __version__


def kernelhub(request):
    return {"KERNELHUB_VERSION": __version__, "LLM_CONFIGURED": settings.LLM_CONFIGURED}
