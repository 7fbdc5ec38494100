// Browser bundles, from tsc's output in build/dist (the wasm bytes are already embedded there as
// a JS module), with esbuild:
// - build/web/: the simulator page. index.html plus ONE classic script (sim-page.js) holding the
//   page code, the Web Worker's bundle as text (started from a blob URL) and a sample trace, so
//   the page also works from file:// (where Chromium blocks module scripts, fetch and Worker URLs);
// - build/browser/select-service.js: the `select-service/browser` export (an ES module).
// Prints the size of each, raw and gzipped (zlib level 9), so a build shows what a change cost.
import { build } from 'esbuild';
import { readFileSync, writeFileSync, mkdirSync, copyFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';

/**
 * zod's JSON Schema conversion (`toJSONSchema`, Standard Schema's `jsonSchema`), left out of the
 * `select-service/browser` bundle: 18 KB that nothing in a browser calls. zod's classic schemas
 * reference it from every constructor, so tree shaking cannot drop it; this plugin loads its two
 * modules as stubs with the same exports (read from the real modules, so a zod upgrade that
 * renames one still builds): the `create...Method` factories, which schema construction calls,
 * return a function that throws, and every other export throws when called. Validation never
 * reaches them. The JSON Schema of the request schemas: the service's `GET /openapi.json`, or
 * `select-service/core` in Node.
 */
const ZOD_JSON_SCHEMA = /[\\/]node_modules[\\/]zod[\\/]v4[\\/]core[\\/](to-json-schema|json-schema-processors)\.js$/;
const NO_JSON_SCHEMA = "select-service/browser leaves out zod's JSON Schema conversion; "
  + "the service's GET /openapi.json has the request schemas' JSON Schema, or use select-service/core in Node";
const zodWithoutJsonSchema = {
  name: 'zod-without-json-schema',
  setup(b) {
    b.onLoad({ filter: ZOD_JSON_SCHEMA }, async ({ path }) => {
      const names = Object.keys(await import(pathToFileURL(path).href));
      const lines = names.map((n) => `export const ${n} = ${n.startsWith('create') ? '() => fail' : 'fail'};`);
      return { contents: `import { fail } from 'no-json-schema';\n${lines.join('\n')}\n`, loader: 'js' };
    });
    // the one thrower both stubs share
    b.onResolve({ filter: /^no-json-schema$/ }, () => ({ path: 'fail', namespace: 'no-json-schema' }));
    b.onLoad({ filter: /.*/, namespace: 'no-json-schema' }, () => ({
      contents: `export const fail = () => { throw new Error(${JSON.stringify(NO_JSON_SCHEMA)}); };\n`, loader: 'js',
    }));
  },
};

/** What the `select-service/browser` bundle may weigh (test/unit/browser-bundle.test.ts holds it there). */
const BROWSER_LIMIT = 300 * 1024;

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
    plugins: [zodWithoutJsonSchema],
  });
  writeFileSync(join(out, 'BUILT'), `${new Date().toISOString()}\n`);
  for (const [file, limit] of [[join(out, 'sim-page.js')], [join(root, 'build/browser/select-service.js'), BROWSER_LIMIT]]) {
    const bytes = readFileSync(file), n = (x) => x.toLocaleString('en-US');
    const budget = limit === undefined ? '' : `, ${n(limit - bytes.length)} under the ${n(limit)}-byte limit`;
    console.log(`${relative(root, file)}: ${n(bytes.length)} bytes, ${n(gzipSync(bytes, { level: 9 }).length)} gzipped${budget}`);
  }
}
