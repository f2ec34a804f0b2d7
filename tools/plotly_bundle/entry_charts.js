'use strict';
// The dashboard, problem, candidate and (SVG) session pages: scatter (in core) and bar.
var Plotly = require('plotly.js/lib/core');

Plotly.register([require('plotly.js/lib/bar')]);

module.exports = Plotly;
