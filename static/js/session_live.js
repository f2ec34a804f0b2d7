/* The live session page: a websocket stream of session events drawn with Plotly.
 *
 * - Events carry sequence numbers. The socket connects with ?after=<last seq held>, so
 *   opening the page mid-session replays the stored events first, and a dropped socket
 *   reconnects (with backoff) and catches up; events at or below the last seq are dropped.
 * - Incoming events only change state; drawing happens at most once per animation frame
 *   (requestAnimationFrame), with one Plotly.react per chart, so a burst of hundreds of
 *   events costs one redraw. The tree layout (leaves left to right in arrival order,
 *   parents centred over their children) is O(n) and recomputed only when nodes arrive.
 * - The tree is drawn with WebGL (scattergl) when a GPU renders it (a 2,000-node update costs
 *   ~30 ms of script there, SVG ~190 ms) and with SVG when WebGL is software-rendered. While a
 *   redraw is expensive, redraws are spaced by twice its cost so the page keeps time for the
 *   user's clicks and scrolling.
 * - Plotly is loaded by this script, not by the page: the build with scattergl only where the
 *   tree is drawn with WebGL, else the lighter one the chart pages share (and cache). The
 *   stream connects at once; drawing starts when Plotly has loaded.
 */
(function () {
  "use strict";

  const BUNDLES = document.currentScript.dataset; // data-plotly-svg, data-plotly-webgl
  const cfg = JSON.parse(document.getElementById("session-config").textContent);
  const STATUS_COLORS = {
    correct: "#3ecf8e", incorrect: "#ff6b6b", hack_suspected: "#ffb347",
    rejected_lazy: "#c792ea", compile_error: "#7f8797", runtime_error: "#7f8797",
    timeout: "#7f8797", problem_defect: "#7f8797", pending: "#3b4660", evaluating: "#3b4660",
    reference: "#5aa9ff", cancelled: "#2a2f3a", screened: "#5c6b8a",
  };
  const TERMINAL = new Set(["finished", "cancelled", "failed"]);
  // The interpreter target checks correctness only: timings are not comparable, every correct
  // node gets the same reward, so the best is the first correct node and no speedup is drawn.
  const INTERPRETER = !!cfg.hardware.is_interpreter;
  const LOG_LIMIT = 400;
  const PLOT_CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };
  // WebGL where a GPU draws it; SVG otherwise: software WebGL (SwiftShader, llvmpipe) took
  // ~1 s to present a 2,000-node frame, SVG ~0.3 s (benchmarks/ui_latency.py).
  const TREE_TRACE = (() => {
    const forced = new URLSearchParams(location.search).get("render"); // ?render=svg|webgl
    if (forced) return forced === "svg" ? "scatter" : "scattergl";
    try {
      const gl = document.createElement("canvas").getContext("webgl");
      if (!gl) return "scatter";
      const info = gl.getExtension("WEBGL_debug_renderer_info");
      const renderer = info ? String(gl.getParameter(info.UNMASKED_RENDERER_WEBGL)) : "";
      const lose = gl.getExtension("WEBGL_lose_context");
      if (lose) lose.loseContext();
      return /swiftshader|llvmpipe|softpipe|software/i.test(renderer) ? "scatter" : "scattergl";
    } catch (e) { return "scatter"; }
  })();
  const DARK = { paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { color: "#e6e9f0", size: 11 } };

  const state = {
    lastSeq: 0,
    nodes: new Map(),        // node_id -> node
    order: [],               // node ids in arrival order (index = point index in the trace)
    roots: [],
    structureChanged: false,
    treeDirty: false,
    bestDirty: false,
    statsDirty: true,
    bestNodeId: null,
    firstCorrectId: null,    // interpreter sessions: the best is the first correct node
    bestSeries: [],          // {t (ms), eager, compile, reward}
    evaluated: 0,
    evalTimes: [],           // server timestamps (ms) of evaluations
    budget: cfg.budget_evaluations,
    status: cfg.status,
    startTs: null,
    endTs: null,
    lastEventTs: null,
    selectedPk: null,
    shownPk: null,
    pendingLog: [],
  };
  const stats = { renders: [], nodeSeenAt: {}, nodeReceivedAt: {}, nodeSentAt: {} };
  let frameSentMs = null;
  window.kernelhubLive = { state, stats, renderer: TREE_TRACE, dropConnection: () => socket && socket.close() };

  // --- the stream ----------------------------------------------------------------------------
  let socket = null;
  let retries = 0;
  let catchupTimer = null;

  function connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    setConnection("connecting");
    socket = new WebSocket(`${proto}://${location.host}${cfg.ws_path}?after=${state.lastSeq}`);
    socket.onopen = () => {
      retries = 0;
      setConnection("live");
      clearInterval(catchupTimer);
      // Belt and braces: ask for anything stored that the stream did not deliver.
      catchupTimer = setInterval(() => {
        if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ action: "catchup" }));
      }, 10000);
    };
    socket.onmessage = (message) => {
      const frame = JSON.parse(message.data);
      frameSentMs = frame.sent_ms;
      for (const event of frame.events || []) handleEvent(event);
      scheduleRender();
    };
    socket.onclose = () => {
      clearInterval(catchupTimer);
      if (TERMINAL.has(state.status)) { setConnection("ended"); return; } // nothing more will come
      const delay = Math.min(500 * 2 ** retries, 10000);
      retries += 1;
      setConnection(retries > 6 ? "refused" : "reconnecting");
      setTimeout(connect, delay);
    };
  }

  function setConnection(kind) {
    const el = document.getElementById("connection");
    if (TERMINAL.has(state.status)) kind = "ended"; // a finished session is not "live"
    el.className = `badge conn-${kind}`;
    el.textContent = { live: "live", connecting: "connecting…", reconnecting: "reconnecting…",
      refused: "offline — retrying", ended: "session ended" }[kind];
    el.title = kind === "ended" ? "the session is over: no more updates" : "websocket";
    el.dataset.state = kind;
  }

  // --- events change state only ----------------------------------------------------------------
  function handleEvent(event) {
    if (event.seq <= state.lastSeq) return; // a duplicate (replay overlapping the stream)
    state.lastSeq = event.seq;
    const ts = Date.parse(event.ts);
    state.lastEventTs = ts;
    const p = event.payload || {};
    switch (event.type) {
      case "node_created": upsertNode(p); break;
      case "node_evaluated":
        upsertNode(p);
        if (p.parent_node_id != null) state.evalTimes.push(ts); // the root is the reference
        state.bestDirty = state.bestSeries.length > 0; // extend the best line to now
        state.evaluated = evaluatedCount(p) != null ? evaluatedCount(p) : state.evaluated + 1;
        break;
      case "best_improved": bestImproved(p, ts); break;
      case "status_changed": statusChanged(p, ts); break;
      default: break;
    }
    if (p.budget) state.budget = p.budget;
    if (evaluatedCount(p) != null) state.evaluated = Math.max(state.evaluated, evaluatedCount(p));
    if (p.screened != null) state.screened = Math.max(state.screened || 0, p.screened);
    state.statsDirty = true;
    state.pendingLog.push(event);
  }

  // The runner sends the session's count as `evaluated` (older events: `evaluated_count`).
  const evaluatedCount = (p) => (p.evaluated != null ? p.evaluated : p.evaluated_count != null ? p.evaluated_count : null);

  function upsertNode(p) {
    const id = String(p.node_id);
    if (!(id in stats.nodeReceivedAt)) {
      stats.nodeReceivedAt[id] = Date.now();
      stats.nodeSentAt[id] = frameSentMs;
    }
    let node = state.nodes.get(id);
    if (!node) {
      node = { id, index: state.order.length, children: [], parent: null, x: 0, depth: p.depth || 0 };
      state.nodes.set(id, node);
      state.order.push(id);
      const parentId = p.parent_node_id != null ? String(p.parent_node_id) : null;
      const parent = parentId && state.nodes.get(parentId);
      if (parent) { node.parent = parent; parent.children.push(node); } else state.roots.push(node);
      state.structureChanged = true;
    }
    for (const key of ["candidate_pk", "status", "reward", "advantage", "speedup_vs_eager",
      "speedup_vs_compile", "bottleneck", "depth", "transformation", "message"]) {
      if (p[key] !== undefined) node[key] = p[key];
    }
    if (!node.status) node.status = "pending";
    // TRLOO: a result changes its siblings' advantages too; the stored rows already carry
    // them, so the live tree must take them or it disagrees with a reload
    for (const [siblingId, value] of Object.entries(p.advantages || {})) {
      const sibling = state.nodes.get(String(siblingId));
      if (sibling) { sibling.advantage = value; sibling.hover = null; sibling.touched = true; }
    }
    if (INTERPRETER && node.status === "correct" && node.parent && state.firstCorrectId === null) {
      state.firstCorrectId = id;
      state.bestNodeId = id;
      state.statsDirty = true;
    }
    node.hover = null;
    node.touched = true;
    state.treeDirty = true;
  }

  function bestImproved(p, ts) {
    if (p.node_id != null && !INTERPRETER) state.bestNodeId = String(p.node_id);
    const node = state.nodes.get(state.bestNodeId);
    const pick = (key) => (p[key] !== undefined ? p[key] : node ? node[key] : null);
    state.bestSeries.push({ t: ts, eager: pick("speedup_vs_eager"), compile: pick("speedup_vs_compile"),
      reward: pick("reward"), pk: pick("candidate_pk") });
    state.bestDirty = state.treeDirty = true;
  }

  function statusChanged(p, ts) {
    state.status = p.status;
    if (p.status === "running" && state.startTs === null) state.startTs = ts;
    if (TERMINAL.has(p.status)) {
      state.endTs = ts;
      setConnection("ended");
      // Let trailing events arrive, then close: a finished session streams nothing more.
      setTimeout(() => { if (socket && TERMINAL.has(state.status)) socket.close(); }, 3000);
    }
    state.bestDirty = true;
    const badge = document.getElementById("session-status");
    badge.className = `badge status-${p.status}`;
    badge.textContent = p.status.charAt(0).toUpperCase() + p.status.slice(1);
    badge.dataset.status = p.status;
    if (p.message !== undefined) document.getElementById("status-message").textContent = p.message;
    // The problem's check ended (the loop moved on, or the session did): its banner goes.
    const checking = document.getElementById("checking-problem");
    if (checking && p.message !== undefined && !p.message.startsWith("checking whether")) checking.remove();
    refreshControls();
  }

  let controlsTimer = null;
  function refreshControls() {
    if (!window.htmx || !document.getElementById("controls")) return;
    clearTimeout(controlsTimer); // replaying many status changes refreshes once
    controlsTimer = setTimeout(() => htmx.ajax("GET", cfg.controls_url, { target: "#controls", swap: "outerHTML" }), 150);
  }

  // --- drawing, once per frame ---------------------------------------------------------------
  let plotlyReady = false;
  let frameRequested = false;
  let lastTreeCost = 0;
  let lastRenderEnd = 0;
  function scheduleRender() {
    if (frameRequested || !plotlyReady) return;
    frameRequested = true;
    const wait = lastRenderEnd + 2 * lastTreeCost - performance.now();
    if (wait > 0 && lastTreeCost > 16) setTimeout(() => requestAnimationFrame(render), Math.min(wait, 500));
    else requestAnimationFrame(render);
  }

  function render() {
    frameRequested = false;
    const t0 = performance.now();
    let drawn = null;
    if (state.treeDirty) drawn = drawTree();
    if (state.bestDirty) drawBest();
    if (state.statsDirty) drawStats();
    if (state.pendingLog.length) drawLog();
    const syncMs = performance.now() - t0;
    Promise.resolve(drawn).then(() => {
      const now = Date.now();
      const touched = [];
      for (const node of state.nodes.values()) {
        if (node.touched) { node.touched = false; touched.push(node.id); }
      }
      for (const id of touched) stats.nodeSeenAt[id] = now;
      lastRenderEnd = performance.now();
      if (drawn) {
        lastTreeCost = lastRenderEnd - t0;
        const record = { nodes: state.order.length, ms: lastTreeCost, syncMs, frameMs: null };
        stats.renders.push(record);
        // When the drawn frame was presented (raster + composite included): the next frame.
        requestAnimationFrame(() => setTimeout(() => { record.frameMs = performance.now() - t0; }, 0));
      }
    });
    maybeLoadBestDiagnostics();
  }

  function layoutTree() {
    let nextX = 0;
    for (const root of state.roots) {
      const stack = [[root, 0]];
      while (stack.length) {
        const top = stack[stack.length - 1];
        const node = top[0];
        if (top[1] < node.children.length) {
          stack.push([node.children[top[1]++], 0]);
        } else {
          stack.pop();
          node.x = node.children.length
            ? (node.children[0].x + node.children[node.children.length - 1].x) / 2
            : nextX++;
        }
      }
      nextX += 1; // a gap between separate roots
    }
    state.structureChanged = false;
  }

  const fmt = (v, digits = 2) => (v === null || v === undefined || Number.isNaN(v) ? "–" : Number(v).toFixed(digits));
  // 3 significant digits (and units) wherever a number is read.
  const sig = (v) => (v === null || v === undefined || Number.isNaN(Number(v)) ? "–" : String(Number(Number(v).toPrecision(3))));
  const times = (v) => (v === null || v === undefined ? "–" : `${sig(v)}×`);
  const ms = (v) => (v === null || v === undefined ? "–" : v < 1 ? `${sig(v * 1000)} µs` : v >= 1000 ? `${sig(v / 1000)} s` : `${sig(v)} ms`);
  // "unknown" says nothing to a reader (no profile): left out of the log and the hover.
  const bottleneckText = (b) => {
    const text = !b ? "" : typeof b === "string" ? b : b.class || "";
    return text === "unknown" ? "" : text;
  };

  function hoverText(n) {
    if (n.hover) return n.hover;
    const b = bottleneckText(n.bottleneck);
    const best = INTERPRETER && n.id === state.firstCorrectId ? " · best (first correct)" : "";
    const speed = INTERPRETER ? "timings not comparable (interpreter)"
      : `× eager ${fmt(n.speedup_vs_eager)} · × compile ${fmt(n.speedup_vs_compile)}`;
    n.hover = `<b>${n.id}</b> · ${n.status}${best}<br>${speed}` +
      `<br>reward ${fmt(n.reward, 3)}${n.advantage != null ? ` · advantage ${fmt(n.advantage, 3)}` : ""}` +
      (b && b !== "unknown" ? `<br>${b}` : "") + (n.transformation ? `<br>${n.transformation}` : "");
    return n.hover;
  }

  function markerSize(n, scale) {
    if (INTERPRETER) return Math.max(3, (n.id === state.firstCorrectId ? 14 : 10) * scale);
    const s = n.speedup_vs_eager;
    let size = 8;
    if (s != null && s > 0) size = Math.max(6, Math.min(26, 11 + 7 * Math.log2(s)));
    else if (n.reward != null && n.status === "correct") size = 8 + 6 * Math.max(0, Math.min(1, n.reward));
    return Math.max(3, size * scale);
  }

  // Edges as ONE polyline: an Euler tour (down each edge, back up) draws every edge with no
  // gaps, so WebGL draws it in one call instead of one per edge.
  function edgeTour(ex, ey) {
    for (const root of state.roots) {
      const stack = [[root, 0]];
      ex.push(root.x); ey.push(root.depth);
      while (stack.length) {
        const top = stack[stack.length - 1];
        const node = top[0];
        if (top[1] < node.children.length) {
          const child = node.children[top[1]++];
          ex.push(child.x); ey.push(child.depth);
          stack.push([child, 0]);
        } else {
          stack.pop();
          if (stack.length) { ex.push(stack[stack.length - 1][0].x); ey.push(stack[stack.length - 1][0].depth); }
        }
      }
      ex.push(null); ey.push(null);
    }
  }

  function drawTree() {
    if (state.structureChanged) layoutTree();
    state.treeDirty = false;
    const count = state.order.length;
    const scale = count > 300 ? Math.max(0.45, Math.sqrt(300 / count)) : 1; // big trees: smaller dots
    const nx = new Array(count), ny = new Array(count), colors = new Array(count), sizes = new Array(count);
    const text = new Array(count), opacity = new Array(count);
    for (let i = 0; i < count; i++) {
      const n = state.nodes.get(state.order[i]);
      nx[i] = n.x; ny[i] = n.depth;
      colors[i] = STATUS_COLORS[n.status] || "#7f8797";
      sizes[i] = markerSize(n, scale);
      opacity[i] = n.status === "correct" || n.depth === 0 ? 1 : 0.7;
      text[i] = hoverText(n);
    }
    const ex = [], ey = [];
    edgeTour(ex, ey);
    // The best path: root to best, drawn over the tree with ringed nodes.
    const bx = [], by = [], bsize = [];
    let best = state.bestNodeId && state.nodes.get(state.bestNodeId);
    while (best) { bx.push(best.x); by.push(best.depth); bsize.push(markerSize(best, scale) + 6); best = best.parent; }
    const traces = [
      { type: TREE_TRACE, mode: "lines", x: ex, y: ey, hoverinfo: "skip", line: { color: "#3b4660", width: 1 }, name: "edges" },
      { type: TREE_TRACE, mode: "lines+markers", x: bx, y: by, hoverinfo: "skip", name: "best path",
        line: { color: "#ffd54f", width: 3 }, marker: { size: bsize, color: "#ffd54f" } },
      { type: TREE_TRACE, mode: "markers", x: nx, y: ny, text, hovertemplate: "%{text}<extra></extra>", name: "nodes",
        marker: { color: colors, size: sizes, opacity } },
    ];
    const layout = Object.assign({}, DARK, {
      margin: { l: 40, r: 10, t: 10, b: 30 }, showlegend: false, hovermode: "closest", uirevision: "tree",
      xaxis: { visible: false, zeroline: false }, dragmode: "pan",
      yaxis: { autorange: "reversed", title: { text: "depth" }, gridcolor: "#232b3d", zeroline: false, dtick: 1 },
    });
    return Plotly.react("tree-plot", traces, layout, PLOT_CONFIG);
  }

  function drawBest() {
    state.bestDirty = false;
    if (!document.getElementById("best-plot")) return null; // interpreter: no reward chart
    const t0 = state.startTs || Date.parse(cfg.created_at);
    const series = state.bestSeries;
    const end = state.endTs || state.lastEventTs || Date.now();
    const x = series.map((s) => (s.t - t0) / 60000).concat(series.length ? [(end - t0) / 60000] : []);
    const last = (key) => (series.length ? [series[series.length - 1][key]] : []);
    const hasSpeedups = series.some((s) => s.eager != null || s.compile != null);
    let traces;
    if (hasSpeedups) {
      traces = [
        { x, y: series.map((s) => s.eager).concat(last("eager")), name: "vs eager", mode: "lines+markers", line: { shape: "hv", color: "#3ecf8e" } },
        { x, y: series.map((s) => s.compile).concat(last("compile")), name: "vs torch.compile", mode: "lines+markers", line: { shape: "hv", color: "#5aa9ff" } },
      ];
    } else {
      traces = [{ x, y: series.map((s) => s.reward).concat(last("reward")), name: "best reward", mode: "lines+markers", line: { shape: "hv", color: "#ffd54f" } }];
    }
    const layout = Object.assign({}, DARK, {
      margin: { l: 50, r: 10, t: 30, b: 40 }, legend: { orientation: "h", y: 1.15 },
      xaxis: { title: { text: "minutes" }, gridcolor: "#232b3d", rangemode: "tozero" },
      yaxis: { title: { text: hasSpeedups ? "speedup (×)" : "best reward" }, gridcolor: "#232b3d" },
      annotations: hasSpeedups || !series.length ? [] : [{ text: "no comparable timings (interpreter): best reward shown", showarrow: false, xref: "paper", yref: "paper", x: 0, y: 1.1, xanchor: "left", font: { color: "#8a93a8" } }],
      shapes: hasSpeedups ? [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: { color: "#8a93a8", dash: "dot", width: 1 } }] : [],
    });
    return Plotly.react("best-plot", traces, layout, PLOT_CONFIG);
  }

  function drawStats() {
    state.statsDirty = false;
    const budget = state.budget || 1;
    const pct = Math.min(100, (100 * state.evaluated) / budget);
    document.getElementById("progress-bar").style.width = `${pct}%`;
    document.getElementById("progress-text").textContent = `${state.evaluated} / ${budget} evaluations`;
    document.getElementById("node-count").textContent = state.order.length;
    const setCount = (id, n) => { const el = document.getElementById(id); if (el && n != null) el.textContent = Math.max(n, Number(el.textContent) || 0); };
    setCount("screened-n", state.screened);
    setCount("evaluated-n", state.evaluated);
    const best = state.bestSeries[state.bestSeries.length - 1];
    const setText = (id, text) => { const el = document.getElementById(id); if (el) el.textContent = text; };
    setText("best-eager", best ? times(best.eager) : "–");
    setText("best-compile", best ? times(best.compile) : "–");
    setText("best-reward", best ? sig(best.reward) : "–");
    setText("best-node", state.firstCorrectId ? `node ${state.firstCorrectId}` : "–");
    const evalTimes = state.evalTimes;
    if (evalTimes.length >= 2 && state.startTs) {
      const minutes = (evalTimes[evalTimes.length - 1] - state.startTs) / 60000;
      document.getElementById("throughput").textContent = minutes > 0 ? fmt(evalTimes.length / minutes, 1) : "–";
    }
    drawClock();
  }

  function drawClock() {
    if (!state.startTs) return;
    const end = state.endTs || (state.status === "running" ? Date.now() : state.lastEventTs);
    const minutes = Math.max(0, (end - state.startTs) / 60000);
    document.getElementById("time-bar").style.width = `${Math.min(100, (100 * minutes) / cfg.budget_minutes)}%`;
    document.getElementById("time-text").textContent = `${minutes.toFixed(1)} / ${cfg.budget_minutes.toFixed(1)} min`;
  }
  setInterval(() => { if (state.status === "running") drawClock(); }, 1000);

  function describe(event) {
    const p = event.payload || {};
    switch (event.type) {
      case "node_created": return `${p.node_id} created (depth ${p.depth ?? "?"}${p.parent_node_id ? `, parent ${p.parent_node_id}` : ""})`;
      case "node_evaluated": return `candidate ${p.node_id}: ${String(p.status).replace(/_/g, " ")}${p.speedup_vs_eager != null ? ` · × eager ${fmt(p.speedup_vs_eager)}` : ""} · reward ${fmt(p.reward, 3)}${bottleneckText(p.bottleneck) ? ` · ${bottleneckText(p.bottleneck)}` : ""}`;
      case "best_improved": return `best → ${p.node_id}${p.speedup_vs_eager != null ? ` × eager ${fmt(p.speedup_vs_eager)}` : ""}${p.reward != null ? ` reward ${fmt(p.reward, 3)}` : ""}`;
      case "status_changed": return `session ${p.status}${p.message ? `: ${p.message}` : ""}`;
      case "log": return p.message || JSON.stringify(p);
      default: return JSON.stringify(p);
    }
  }

  function drawLog() {
    const list = document.getElementById("event-log");
    const fragment = document.createDocumentFragment();
    const events = state.pendingLog.splice(0).slice(-LOG_LIMIT);
    for (let i = events.length - 1; i >= 0; i--) {
      const e = events[i];
      const li = document.createElement("li");
      li.className = `t-${e.type}`;
      const time = new Date(e.ts).toISOString().slice(11, 19);
      li.innerHTML = `<span class="seq">#${e.seq}</span> ${time} `;
      li.appendChild(document.createTextNode(describe(e)));
      li.title = li.textContent;
      fragment.appendChild(li);
    }
    list.insertBefore(fragment, list.firstChild);
    while (list.children.length > LOG_LIMIT) list.removeChild(list.lastChild);
  }

  // --- diagnostics of the selected or best node ---------------------------------------------------
  function maybeLoadBestDiagnostics() {
    if (state.selectedPk) return;
    const node = state.bestNodeId && state.nodes.get(state.bestNodeId);
    const pk = (node && node.candidate_pk) || (state.bestSeries.length && state.bestSeries[state.bestSeries.length - 1].pk);
    if (pk && pk !== state.shownPk) loadDiagnostics(pk, false);
  }

  let diagTimer = null;
  function loadDiagnostics(pk, selected) {
    state.shownPk = pk;
    clearTimeout(diagTimer);
    diagTimer = setTimeout(async () => {
      const response = await fetch(cfg.diagnostics_url.replace("/0/", `/${pk}/`), { credentials: "same-origin" });
      if (!response.ok || state.shownPk !== pk) return;
      drawDiagnostics(await response.json(), selected);
    }, selected ? 0 : 300);
  }

  function row(label, value) {
    const tr = document.createElement("tr");
    const th = document.createElement("th"); th.textContent = label;
    const td = document.createElement("td"); td.textContent = value;
    tr.append(th, td);
    return tr;
  }

  function drawDiagnostics(d, selected) {
    document.getElementById("diag-empty").hidden = true;
    document.getElementById("diag-body").hidden = false;
    const title = document.getElementById("diag-title");
    title.textContent = selected ? `of node ${d.node_id} (selected) `
      : INTERPRETER ? `of the best node — the first correct one, ${d.node_id}` : `of the best node, ${d.node_id}`;
    if (selected) {
      const back = document.createElement("a");
      back.href = "#"; back.textContent = "show best"; back.id = "diag-show-best";
      back.onclick = (ev) => { ev.preventDefault(); state.selectedPk = null; state.shownPk = null; maybeLoadBestDiagnostics(); };
      title.appendChild(back);
    }
    const open = document.getElementById("diag-open");
    open.href = d.url;
    open.textContent = `Open candidate ${d.node_id}`;
    const badge = document.getElementById("diag-status");
    badge.className = `badge status-${d.status}`; badge.textContent = d.status;
    const b = d.bottleneck || {};
    const table = document.getElementById("diag-table");
    table.replaceChildren(
      row("× eager / × compile", INTERPRETER ? "n/a — timings are not comparable" : `${times(d.speedup_vs_eager)} / ${times(d.speedup_vs_compile)}`),
      row("Reward / advantage", `${sig(d.reward)} / ${sig(d.advantage)}`),
      row("Bottleneck", b.class ? `${b.class}${b.reason ? ` — ${b.reason}` : ""}` : "–"),
      row("Coverage (custom-kernel time)", d.coverage != null ? `${Math.round(d.coverage * 100)}%` : "–"),
      row("Candidate time", d.candidate_ms != null ? `${ms(d.candidate_ms)}${INTERPRETER ? " (CPU interpreter)" : ""}` : "–"),
      row("Transformation", d.transformation || "–"),
      row("Integrity flags", d.integrity_flags.length ? d.integrity_flags.map((f) => f.check).join(", ") : "none"),
    );
    const body = document.querySelector("#diag-kernels tbody");
    body.replaceChildren(...(d.kernels.length ? d.kernels : [{ name: "–" }]).map((k) => {
      const tr = document.createElement("tr");
      for (const v of [k.name, k.n_regs, k.n_spills, k.shared_bytes, k.num_warps,
        k.occupancy != null ? `${Math.round(k.occupancy * 100)}%${k.limited_by ? ` (${k.limited_by})` : ""}` : null]) {
        const td = document.createElement("td"); td.textContent = v == null ? "–" : v; tr.appendChild(td);
      }
      return tr;
    }));
    drawRoofline(d);
  }

  function drawRoofline(d) {
    if (!document.getElementById("roofline-plot")) return null; // no ceilings: no empty box
    const hw = cfg.hardware;
    const roof = d.roofline || {};
    const layout = Object.assign({}, DARK, {
      margin: { l: 60, r: 10, t: 30, b: 40 }, legend: { orientation: "h", y: 1.18 },
      xaxis: { type: "log", title: { text: "arithmetic intensity (FLOP/byte)" }, gridcolor: "#232b3d" },
      yaxis: { type: "log", title: { text: "TFLOP/s" }, gridcolor: "#232b3d" },
    });
    if (hw.is_interpreter || !hw.memory_bandwidth_gbs) {
      layout.annotations = [{ text: "Interpreter target: no device ceilings.<br>The roofline needs a GPU target.", showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5 }];
      layout.xaxis.visible = layout.yaxis.visible = false;
      return Plotly.react("roofline-plot", [], layout, PLOT_CONFIG);
    }
    const bw = hw.memory_bandwidth_gbs / 1000; // TB/s: TFLOP/s per FLOP/byte
    const ai = roof.arithmetic_intensity || null;
    const ridge = hw.bf16_tflops / bw;
    const lo = Math.min(0.01, ai ? ai / 10 : 0.01), hi = Math.max(ridge * 10, ai ? ai * 10 : 0);
    const xs = [];
    for (let v = lo; v <= hi * 1.0001; v *= 1.5) xs.push(v);
    const ceiling = (peak) => xs.map((x) => Math.min(bw * x, peak));
    const traces = [
      { x: xs, y: ceiling(hw.bf16_tflops), name: `bf16 ${hw.bf16_tflops} TFLOP/s`, mode: "lines", line: { color: "#8a93a8" } },
      { x: xs, y: ceiling(hw.fp32_tflops), name: `fp32 ${hw.fp32_tflops} TFLOP/s`, mode: "lines", line: { color: "#8a93a8", dash: "dash" } },
    ];
    if (ai && roof.achieved_tflops) {
      traces.push({ x: [ai], y: [roof.achieved_tflops], name: d.node_id, mode: "markers",
        marker: { size: 12, color: STATUS_COLORS[d.status] || "#ffd54f", line: { color: "#ffd54f", width: 2 } },
        hovertemplate: `AI %{x:.3g} FLOP/B<br>%{y:.3g} TFLOP/s<extra>${d.node_id}</extra>` });
    } else {
      layout.annotations = [{ text: roof.reason || "no GPU timing for this node", showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.1 }];
    }
    return Plotly.react("roofline-plot", traces, layout, PLOT_CONFIG);
  }

  // --- start ------------------------------------------------------------------------------------
  function wireClicks() {
    const plot = document.getElementById("tree-plot");
    plot.on("plotly_click", (data) => {
      const point = data.points.find((pt) => pt.curveNumber === 2);
      if (!point) return;
      const node = state.nodes.get(state.order[point.pointIndex]);
      if (!node || !node.candidate_pk) return;
      if (state.selectedPk === node.candidate_pk || data.event.ctrlKey || data.event.metaKey) {
        // A second click on the selected node (or a ctrl-click) opens its candidate page.
        window.location.href = cfg.candidate_url.replace("/0/", `/${node.candidate_pk}/`);
        return;
      }
      state.selectedPk = node.candidate_pk;
      loadDiagnostics(node.candidate_pk, true);
    });
  }

  function loadPlotly() {
    if (window.Plotly) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = TREE_TRACE === "scattergl" ? BUNDLES.plotlyWebgl : BUNDLES.plotlySvg;
      script.onload = resolve;
      script.onerror = () => reject(new Error(`could not load ${script.src}`));
      document.head.appendChild(script);
    });
  }

  connect(); // the stored events replay while Plotly loads
  loadPlotly().then(() => {
    plotlyReady = true;
    state.treeDirty = true;
    Promise.resolve(drawTree()).then(wireClicks);
    drawBest();
    scheduleRender();
  });
})();
