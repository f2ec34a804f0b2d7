"""Flags that several commands of `python -m search_engine` share."""

from __future__ import annotations


def add_isolation_argument(p) -> None:
    """`--isolation {auto,required,off}`: how the candidate's sandbox is isolated."""
    p.add_argument("--isolation", default="auto", choices=["auto", "required", "off"],
                   help="sandbox isolation: auto (default: every layer this host gives, the rest "
                        "reported), required (fail unless the user, PID, mount, network and "
                        "memory layers all work), off (plain subprocess, for debugging)")


def with_isolation(config, args):
    """`config` (an EvaluationConfig) with `--isolation` threaded into its sandbox limits."""
    from dataclasses import replace

    isolation = getattr(args, "isolation", None)
    if not isolation or isolation == config.limits.isolation:
        return config
    return replace(config, limits=replace(config.limits, isolation=isolation))


def parse_sizes(items: list[str]) -> dict[str, int | float]:
    """`--size NAME=VALUE` flags (repeatable) as a dict of numbers."""
    sizes: dict[str, int | float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--size expects NAME=VALUE, got {item!r}")
        try:
            sizes[name] = int(value)
        except ValueError:
            try:
                sizes[name] = float(value)
            except ValueError:
                raise ValueError(f"--size {name}: {value!r} is not a number") from None
    return sizes
