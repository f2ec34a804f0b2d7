from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "kernelhub.api"
    label = "api"
    verbose_name = "API"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the OpenAPI security scheme for `Authorization: Api-Key ...`.
        from kernelhub.api import schema  # noqa: F401
