// The attribute files' documentation (description, role, ...) serves Plotly's schema and
// docs, not drawing: plotly.js strips it from its own dist bundles the same way
// (tasks/compress_attributes.js there). Conservative: a value that is not a plain string or
// a joined array of strings stays.
const fs = require('fs');

const regex = (source) => new RegExp(source, 'g');
const STRING = "'(?:[^'\\\\\\n]|\\\\.)*'";
const LINE_END = '(?=\\s*(?:\\n|\\}))';
const STRIP = [
  regex(`\\s*description: ${STRING},?${LINE_END}`),
  regex(`\\s*description: \\[[\\s\\S]*?\\]\\.join\\(\\s*${STRING}\\s*\\),?`),
  regex('\\s*requiredOpts: \\[[^\\]]*\\],?'),
  regex('\\s*otherOpts: \\[[^\\]]*\\],?'),
  regex(`\\s*role: ${STRING},?${LINE_END}`),
  regex(`\\s*hrName: ${STRING},?${LINE_END}`),
];

module.exports = {
  name: 'strip-meta-attributes',
  setup(build) {
    build.onLoad({ filter: /plotly\.js[\\/]src[\\/].*attributes\.js$/ }, async (file) => {
      let source = await fs.promises.readFile(file.path, 'utf-8');
      for (const pattern of STRIP) source = source.replace(pattern, '');
      return { contents: source, loader: 'js' };
    });
  },
};
