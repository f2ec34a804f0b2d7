"""The vendored Plotly bundles (issue 32 item 8): only the trace types the pages draw, built
from the plotly.js that the pinned `plotly` package targets; the full bundle is not served."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from types import SimpleNamespace

import plotly
from django.conf import settings
from django.contrib.staticfiles import finders

from kernelhub import charts

VENDOR = Path(settings.BASE_DIR) / "static" / "vendor" / "plotly"
BANNER = re.compile(
    r"plotly\.js v(?P<version>[\d.]+) \(MIT, Plotly, Inc\.\): traces (?P<traces>[a-z0-9, ]+);")


def bundle_banner(name: str) -> re.Match:
    with open(VENDOR / name, encoding="utf-8") as bundle:
        match = BANNER.search(bundle.readline())
    assert match, f"{name} has no build banner: rebuild it with tools/plotly_bundle"
    return match


def bundle_traces(name: str) -> set[str]:
    return {t.strip() for t in bundle_banner(name)["traces"].split(",")}


def test_bundles_match_the_plotly_js_the_python_package_targets():
    full = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    with open(full, encoding="utf-8") as bundle:
        target = re.search(r"plotly\.js v([\d.]+)", bundle.read(200)).group(1)
    pinned = json.loads((Path(settings.BASE_DIR) / "tools" / "plotly_bundle" / "package.json")
                        .read_text())["devDependencies"]["plotly.js"]
    assert pinned == target
    for name in ("plotly-charts.min.js", "plotly-charts-gl.min.js"):
        assert bundle_banner(name)["version"] == target, name
        assert (VENDOR / name).stat().st_size < full.stat().st_size / 3


def test_full_bundle_is_not_a_static_file_and_no_template_asks_for_it():
    assert finders.find("plotly/plotly.min.js") is None
    for template in (Path(settings.BASE_DIR) / "templates").rglob("*.html"):
        assert "plotly.min.js" not in template.read_text(), template
    assert finders.find("vendor/plotly/plotly-charts.min.js")
    assert finders.find("vendor/plotly/plotly-charts-gl.min.js")
    assert bundle_traces("plotly-charts-gl.min.js") == \
        bundle_traces("plotly-charts.min.js") | {"scattergl"}


def test_every_server_built_figure_uses_a_trace_type_of_the_charts_bundle():
    day = dt.date(2026, 12, 1)
    at = dt.datetime(2026, 12, 1, 12, tzinfo=dt.timezone.utc)
    session = SimpleNamespace(pk=1, hardware=SimpleNamespace(display_name="H200"))
    figures = [
        charts.approved_kernels_figure([{"is_interpreter": False, "hardware": "H200",
                                         "family": "relu", "precision": "strict",
                                         "eager": 2.0, "compile": 1.5}]),
        charts.evaluations_figure([{"day": day, "outcome": "correct", "count": 3}]),
        charts.best_over_time_figure([{"problem": "relu", "hardware": "H200", "at": at,
                                       "eager": 2.0, "session": 1}]),
        charts.problem_sessions_figure([(session, [{"at": at, "eager": 2.0, "node_id": "3"}])]),
        charts.roofline_figure({"bandwidth_gbs": 4800, "fp32_tflops": 60, "bf16_tflops": 900,
                                "points": [{"label": "candidate 3", "ai": 0.5, "tflops": 1.5}]}),
    ]
    drawn = {trace["type"] for figure in figures for trace in charts.figure_json(figure)["data"]}
    assert drawn and drawn <= bundle_traces("plotly-charts.min.js")
