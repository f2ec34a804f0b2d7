from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "kernelhub.review"
    label = "review"
    verbose_name = "Review"
