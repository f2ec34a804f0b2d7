from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "kernelhub.teams"
    label = "teams"
    verbose_name = "Teams"
