from django import template
from django.urls import NoReverseMatch, reverse

register = template.Library()


@register.simple_tag
def url_if_exists(name: str, *args) -> str:
    """Reverse `name`, or '' while the page it names is not installed."""
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return ""
