/* Draws the server-built Plotly figures: every <div data-chart="ID"> takes the figure in
 * the json_script element ID ({"data", "layout"}). */
(function () {
  "use strict";
  const CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };
  for (const el of document.querySelectorAll("[data-chart]")) {
    const source = document.getElementById(el.dataset.chart);
    if (!source) continue;
    const figure = JSON.parse(source.textContent);
    if (!figure) continue;
    Plotly.newPlot(el, figure.data, figure.layout, CONFIG).then(() => { el.dataset.drawn = "1"; });
  }
})();
