"""Numbers as people read them: 3 significant digits and a unit.

    {{ value|sig }}        0.0323 -> "0.0323", 123456 -> "1.23e+05", None -> "–"
    {{ value|ms }}         milliseconds: 0.0175 -> "17.5 µs", 34.2 -> "34.2 ms", 1500 -> "1.5 s"
    {{ value|times }}      a speedup: 1.2345 -> "1.23×"
    {{ value|percent }}    a fraction: 0.953 -> "95.3%"
"""

from __future__ import annotations

import math

from django import template

register = template.Library()
DASH = "–"


def _number(value):
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def sig3(number: float) -> str:
    if number == 0:
        return "0"
    if 1e-3 <= abs(number) < 1e5:
        return f"{number:.3g}" if abs(number) < 1e3 else f"{number:.0f}"
    return f"{number:.2e}"


@register.filter
def sig(value) -> str:
    number = _number(value)
    return DASH if number is None else sig3(number)


@register.filter
def ms(value) -> str:
    number = _number(value)
    if number is None:
        return DASH
    if abs(number) >= 1000:
        return f"{sig3(number / 1000)} s"
    if 0 < abs(number) < 1:
        return f"{sig3(number * 1000)} µs"
    return f"{sig3(number)} ms"


@register.filter
def times(value) -> str:
    number = _number(value)
    return DASH if number is None else f"{sig3(number)}×"


@register.filter
def percent(value) -> str:
    number = _number(value)
    return DASH if number is None else f"{sig3(number * 100)}%"
