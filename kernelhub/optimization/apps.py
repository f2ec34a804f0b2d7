from django.apps import AppConfig


class OptimizationConfig(AppConfig):
    name = "kernelhub.optimization"
    label = "optimization"
    verbose_name = "Optimization"
