// Builds the web UI into internal/webui/dist (or --outdir DIR), which the Go binary embeds.
// The output depends only on the sources and the pinned packages, so scripts/check-web.sh
// can rebuild it elsewhere and compare: no timestamps, no absolute paths.
import * as esbuild from 'esbuild';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const argOutdir = process.argv.indexOf('--outdir');
const outdir = path.resolve(argOutdir > 0 ? process.argv[argOutdir + 1] : path.join(here, '../internal/webui/dist'));

await rm(outdir, { recursive: true, force: true });
await mkdir(outdir, { recursive: true });

const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: { main: 'src/main.jsx' },
  bundle: true,
  // The terminal (xterm.js, most of the bytes) is a chunk loaded when a terminal opens.
  splitting: true,
  format: 'esm',
  minify: true,
  target: ['chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: path.join(outdir, 'assets'),
  entryNames: '[name]-[hash]',
  chunkNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  // The packages' licences go to licenses.txt below, whole.
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

// index.html names the hashed entry script and stylesheet.
let entry, css;
for (const [file, out] of Object.entries(result.metafile.outputs)) {
  if (out.entryPoint === 'src/main.jsx') {
    entry = file;
    css = out.cssBundle;
  }
}
if (!entry || !css) throw new Error('build: no entry script or stylesheet in the output');
const asset = (file) => '/' + path.relative(outdir, path.resolve(here, file)).split(path.sep).join('/');
const html = (await readFile(path.join(here, 'index.html'), 'utf8'))
  .replace('{{script}}', asset(entry))
  .replace('{{style}}', asset(css));
await writeFile(path.join(outdir, 'index.html'), html);

for (const f of ['icon.svg', 'manifest.webmanifest', 'sw.js']) {
  await writeFile(path.join(outdir, f), await readFile(path.join(here, 'public', f)));
}

// The bundled packages' licences, as their MIT licences ask.
let licenses = '';
for (const pkg of ['preact', '@xterm/xterm', '@xterm/addon-fit']) {
  const meta = JSON.parse(await readFile(path.join(here, 'node_modules', pkg, 'package.json'), 'utf8'));
  const text = await readFile(path.join(here, 'node_modules', pkg, 'LICENSE'), 'utf8');
  licenses += `${pkg} ${meta.version}\n\n${text.trim()}\n\n`;
}
await writeFile(path.join(outdir, 'licenses.txt'), licenses);
