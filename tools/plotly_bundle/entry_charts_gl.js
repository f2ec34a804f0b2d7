'use strict';
// The live session page where a GPU renders WebGL: the tree is drawn with scattergl.
var Plotly = require('plotly.js/lib/core');

Plotly.register([require('plotly.js/lib/bar'), require('plotly.js/lib/scattergl')]);

module.exports = Plotly;
