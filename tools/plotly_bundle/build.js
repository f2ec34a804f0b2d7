// Builds static/vendor/plotly/ from the pinned plotly.js (package.json): a bundle per set of
// trace types the pages draw, with esbuild and the plugins of plotly.js's own esbuild-config.js.
//   cd tools/plotly_bundle && npm ci && npm run build
const esbuild = require('esbuild');
const path = require('path');
const { environmentPlugin } = require('esbuild-plugin-environment');
const { glsl } = require('esbuild-plugin-glsl');
const InlineCSSPlugin = require('esbuild-plugin-inline-css');
const stripMeta = require('./strip_meta');

const VERSION = require('plotly.js/package.json').version;
const OUT_DIR = path.resolve(__dirname, '../../static/vendor/plotly');
const BUNDLES = {
  'plotly-charts.min.js': { entry: 'entry_charts.js', traces: 'scatter, bar' },
  'plotly-charts-gl.min.js': { entry: 'entry_charts_gl.js', traces: 'scatter, bar, scattergl' },
};

// No map trace is registered, so maplibre's stylesheet (83 kB, required by the registry for
// map subplots) is dead weight.
const noMapStyles = {
  name: 'no-map-styles',
  setup(build) {
    build.onResolve({ filter: /maplibre-gl\.css$/ }, (args) => ({ path: args.path, namespace: 'empty' }));
    build.onLoad({ filter: /.*/, namespace: 'empty' }, () => ({ contents: '', loader: 'js' }));
  },
};

async function main() {
  for (const [name, { entry, traces }] of Object.entries(BUNDLES)) {
    await esbuild.build({
      entryPoints: [path.join(__dirname, entry)],
      outfile: path.join(OUT_DIR, name),
      format: 'iife',
      globalName: 'Plotly',
      bundle: true,
      minify: true,
      legalComments: 'none',
      banner: { js: `/* plotly.js v${VERSION} (MIT, Plotly, Inc.): traces ${traces}; built by tools/plotly_bundle */` },
      plugins: [noMapStyles, stripMeta, InlineCSSPlugin(), glsl({ minify: true }), environmentPlugin({ NODE_DEBUG: false })],
      alias: { regl: '@plotly/regl', stream: 'stream-browserify' },
      define: { global: 'window', 'define.amd': 'false' },
      target: 'es2016',
      logLevel: 'info',
    });
  }
}

main().catch(() => process.exit(1));
