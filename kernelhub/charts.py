"""Plotly figures of the dashboard, problem and candidate pages, built server side.

Each function takes the rows a selector returned and gives a `plotly.graph_objects.Figure`
(or None when there is nothing to draw: the page shows its empty state instead). The page
draws it with static/vendor/plotly/plotly-charts.min.js, a Plotly of only scatter and bar
(static/js/charts.js); a new trace type here needs `make plotly-bundle` (a test says so)."""

from __future__ import annotations

import json
from collections import defaultdict

import plotly.graph_objects as go

GREEN, BLUE, RED, ORANGE, PURPLE, GREY, GOLD = (
    "#3ecf8e", "#5aa9ff", "#ff6b6b", "#ffb347", "#c792ea", "#7f8797", "#ffd54f")
OUTCOME_COLORS = {"correct": GREEN, "incorrect": RED, "hack": ORANGE, "lazy": PURPLE,
                  "kernel error": GREY, "infrastructure": "#3b4a66"}
GRID = "#232b3d"


def _layout(fig: go.Figure, **kwargs) -> go.Figure:
    fig.update_layout(
        paper_bgcolor="rgba(0,0,0,0)", plot_bgcolor="rgba(0,0,0,0)",
        font={"color": "#e6e9f0", "size": 11}, margin={"l": 55, "r": 10, "t": 30, "b": 45},
        legend={"orientation": "h", "y": 1.15}, **kwargs)
    fig.update_xaxes(gridcolor=GRID, zeroline=False)
    fig.update_yaxes(gridcolor=GRID, zeroline=False)
    return fig


def figure_json(fig: go.Figure | None) -> dict | None:
    """The figure as plain JSON data ({"data", "layout"}) for `json_script`."""
    return None if fig is None else json.loads(fig.to_json())


def _one_x(shapes_y: float = 1.0) -> dict:
    return {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": shapes_y, "y1": shapes_y,
            "line": {"color": "#8a93a8", "dash": "dot", "width": 1}}


def approved_kernels_figure(rows: list[dict]) -> go.Figure | None:
    """Best approved speedup per (hardware, family, precision): bars over eager and over
    torch.compile, side by side."""
    groups: dict[tuple, dict] = defaultdict(lambda: {"eager": None, "compile": None, "n": 0})
    for row in rows:
        if row["is_interpreter"]:
            continue  # interpreter timings are not comparable with GPU numbers
        group = groups[(row["hardware"], row["family"], row["precision"])]
        group["n"] += 1
        for key in ("eager", "compile"):
            if row[key] is not None and (group[key] is None or row[key] > group[key]):
                group[key] = row[key]
    if not groups:
        return None
    keys = sorted(groups)
    labels = [f"{family} · {hw}" + ("" if precision == "strict" else f" ({precision})")
              for hw, family, precision in keys]
    counts = [groups[k]["n"] for k in keys]
    fig = go.Figure([
        go.Bar(name="× eager", x=labels, y=[groups[k]["eager"] for k in keys],
               marker_color=GREEN, customdata=counts,
               hovertemplate="%{x}<br>best %{y:.3g}× over eager<br>%{customdata} kernel(s)"
                             "<extra></extra>"),
        go.Bar(name="× torch.compile", x=labels, y=[groups[k]["compile"] for k in keys],
               marker_color=BLUE, customdata=counts,
               hovertemplate="%{x}<br>best %{y:.3g}× over torch.compile<br>%{customdata} "
                             "kernel(s)<extra></extra>"),
    ])
    return _layout(fig, barmode="group", yaxis_title="best speedup (×)", shapes=[_one_x()])


def evaluations_figure(rows: list[dict]) -> go.Figure | None:
    """Evaluations per day, stacked by outcome."""
    if not rows:
        return None
    days = sorted({r["day"] for r in rows})
    by = {(r["day"], r["outcome"]): r["count"] for r in rows}
    traces = []
    for outcome, color in OUTCOME_COLORS.items():
        values = [by.get((day, outcome), 0) for day in days]
        if any(values):
            traces.append(go.Bar(name=outcome, x=[d.isoformat() for d in days], y=values,
                                 marker_color=color,
                                 hovertemplate=f"%{{x}}: %{{y}} {outcome}<extra></extra>"))
    fig = go.Figure(traces)
    _layout(fig, barmode="stack", yaxis_title="evaluations", xaxis_type="date")
    fig.update_xaxes(tickformat="%b %d", dtick=86400000.0)  # one tick a day, no clock times
    return fig


def best_over_time_figure(rows: list[dict]) -> go.Figure | None:
    """Each session's best speedup over eager by when it ran, one line per problem."""
    if not rows:
        return None
    by_problem: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_problem[f"{row['problem']} · {row['hardware']}"].append(row)
    fig = go.Figure([
        go.Scatter(name=name, mode="lines+markers", x=[r["at"].isoformat() for r in series],
                   y=[r["eager"] for r in series], customdata=[r["session"] for r in series],
                   hovertemplate="session %{customdata}<br>%{y:.3g}× over eager<extra>"
                                 + name + "</extra>")
        for name, series in sorted(by_problem.items())])
    return _layout(fig, yaxis_title="best speedup over eager (×)", xaxis_type="date",
                   shapes=[_one_x()])


def problem_sessions_figure(series_by_session: list[tuple[object, list[dict]]]
                            ) -> go.Figure | None:
    """Every session's best speedup over eager as it improved, one step line per session."""
    traces = []
    for session, series in series_by_session:
        if not series:
            continue
        traces.append(go.Scatter(
            name=f"session {session.pk} · {session.hardware.display_name}",
            mode="lines+markers", line_shape="hv",
            x=[p["at"].isoformat() for p in series], y=[p["eager"] for p in series],
            customdata=[p["node_id"] for p in series],
            hovertemplate="node %{customdata}: %{y:.3g}× over eager<extra></extra>"))
    if not traces:
        return None
    return _layout(go.Figure(traces), yaxis_title="best speedup over eager (×)",
                   xaxis_type="date", shapes=[_one_x()])


def roofline_figure(roofline: dict | None) -> go.Figure | None:
    """The target's roofline (bandwidth slope, fp32 and bf16 compute roofs) with points."""
    if not roofline:
        return None
    bw = roofline["bandwidth_gbs"] / 1000.0  # TB/s = TFLOP/s per FLOP/byte
    ais = [p["ai"] for p in roofline["points"]]
    ridge = roofline["bf16_tflops"] / bw
    lo, hi = min(0.01, min(ais) / 10), max(ridge * 10, max(ais) * 10)
    xs, x = [], lo
    while x <= hi * 1.0001:
        xs.append(x)
        x *= 1.5
    traces = [
        go.Scatter(x=xs, y=[min(bw * v, roofline["bf16_tflops"]) for v in xs], mode="lines",
                   name=f"bf16 roof {roofline['bf16_tflops']:.3g} TFLOP/s",
                   line={"color": "#8a93a8"}, hoverinfo="skip"),
        go.Scatter(x=xs, y=[min(bw * v, roofline["fp32_tflops"]) for v in xs], mode="lines",
                   name=f"fp32 roof {roofline['fp32_tflops']:.3g} TFLOP/s",
                   line={"color": "#8a93a8", "dash": "dash"}, hoverinfo="skip"),
    ]
    colors = [GOLD, BLUE, GREEN, PURPLE]
    for point, color in zip(roofline["points"], colors):
        traces.append(go.Scatter(
            x=[point["ai"]], y=[point["tflops"]], mode="markers", name=point["label"],
            marker={"size": 12, "color": color, "line": {"color": "#0f1420", "width": 1}},
            hovertemplate="%{x:.3g} FLOP/B<br>%{y:.3g} TFLOP/s<extra>" + point["label"]
                          + "</extra>"))
    fig = go.Figure(traces)
    _layout(fig, xaxis_title="arithmetic intensity (FLOP/byte)", yaxis_title="TFLOP/s")
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    return fig
