// Browser bundles, from tsc's output in build/dist (the wasm bytes are already embedded there as
// a JS module), with esbuild:
// - build/web/: the simulator page. index.html plus ONE classic script (sim-page.js) holding the
//   page code, the Web Worker's bundle as text (started from a blob URL) and a sample trace, so
//   the page also works from file:// (where Chromium blocks module scripts, fetch and Worker URLs);
// - build/browser/select-service.js: the `select-service/browser` export (an ES module).
import { build } from 'esbuild';
import { readFileSync, writeFileSync, mkdirSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Requests of the Mooncake conversation trace embedded as the page's sample. */
const SAMPLE_REQUESTS = 2000;

export async function bundleWeb(root) {
  const dist = join(root, 'build/dist');
  const common = { bundle: true, platform: 'browser', target: 'es2022', legalComments: 'none', logLevel: 'warning' };
  const worker = await build({ ...common, entryPoints: [join(dist, 'web/worker.js')], format: 'iife', minify: true, write: false });
  const { headLines } = await import(pathToFileURL(join(dist, 'src/sim/trace.js')).href);
  const sample = headLines(readFileSync(join(root, 'test/fixtures/mooncake/conversation_trace.jsonl'), 'utf8'), SAMPLE_REQUESTS);
  const out = join(root, 'build/web');
  mkdirSync(out, { recursive: true });
  await build({
    ...common, entryPoints: [join(dist, 'web/app.js')], format: 'iife', minify: true, outfile: join(out, 'sim-page.js'),
    define: { __WORKER_SOURCE__: JSON.stringify(worker.outputFiles[0].text), __SAMPLE_TRACE__: JSON.stringify(sample) },
  });
  copyFileSync(join(root, 'web/index.html'), join(out, 'index.html'));
  await build({
    // minified, and zod imported as a namespace (`import * as z`) so esbuild keeps only the parts
    // used (its locales were two thirds of the bundle): 1,021 KB -> under 300 KB (bench/RESULTS.md)
    ...common, entryPoints: [join(dist, 'src/browser.js')], format: 'esm', minify: true, outfile: join(root, 'build/browser/select-service.js'),
  });
  writeFileSync(join(out, 'BUILT'), `${new Date().toISOString()}\n`);
}
