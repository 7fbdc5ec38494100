/**
 * The simulator page in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core;
 * never a downloaded browser): opened from the file system, it runs a short simulation of the
 * bundled sample in its Web Worker and renders the table and charts; the `select-service/browser`
 * bundle works as an ES module without the page.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AddressInfo } from 'node:net';
import { serveStatic } from '../../../src/simulate-serve.js';

const CHROMIUM = '/usr/bin/chromium';
const SKIP = existsSync(CHROMIUM) ? false
  : `skipped: Chromium is not installed at ${CHROMIUM} (Debian: apt-get install -y chromium; .ci/run installs it)`;
const BUILD = join(process.cwd(), 'build');

type Browser = Awaited<ReturnType<typeof import('playwright-core')['chromium']['launch']>>;
let browser: Browser | null = null;

before(async () => {
  if (SKIP) return;
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({ executablePath: CHROMIUM });
});
after(async () => { await browser?.close(); });

test('the page runs a simulation from file:// and renders the table and charts', { skip: SKIP }, async () => {
  const page = await browser!.newPage({ viewport: { width: 1300, height: 1000 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(pathToFileURL(join(BUILD, 'web/index.html')).href);
  await page.waitForFunction(() => document.body.dataset.state === 'ready');
  assert.match(await page.textContent('#sample-size') ?? '', /^2000 requests$/);
  await page.fill('#limit', '400');
  await page.check('input[name=policy][value=session_affinity]');
  await page.click('#run');
  await page.waitForFunction(() => document.body.dataset.state !== 'running' && document.body.dataset.state !== 'ready', null, { timeout: 120_000 });
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done', await page.textContent('#status') ?? '');
  const rows = await page.$$eval('#metrics tbody tr', (trs) => trs.map((tr) => ({
    policy: (tr as HTMLElement).dataset.policy, hit: Number((tr as HTMLElement).dataset.hitRate),
    ttft: Number((tr as HTMLElement).dataset.ttftP50), cells: Array.from(tr.querySelectorAll('td'), (td) => td.textContent),
  })));
  assert.deepEqual(rows.map((r) => r.policy), ['kv', 'round_robin', 'random', 'least_loaded', 'session_affinity']);
  for (const r of rows) {
    assert.ok(r.hit > 0 && r.hit < 0.5, `${r.policy} hit rate ${r.hit}`);
    assert.ok(r.ttft > 10 && r.ttft < 60_000, `${r.policy} TTFT p50 ${r.ttft} ms`);
    assert.match(r.cells[1] ?? '', /^\d+\.\d%$/);
  }
  const paths = (sel: string) => page.$$eval(`${sel} path.series`, (ps) => ps.map((p) => (p.getAttribute('d') ?? '').length));
  const hit = await paths('#chart-hit');
  const ttft = await paths('#chart-ttft');
  assert.equal(hit.length, 5);
  assert.equal(ttft.length, 5);
  for (const d of [...hit, ...ttft]) assert.ok(d > 100, 'every series drew a line');
  assert.equal(await page.$$eval('#chart-load svg', (s) => s.length), 5);
  assert.equal((await paths('#chart-load')).length, 5 * 8);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a scorer that does not compile is reported on the page', { skip: SKIP }, async () => {
  const page = await browser!.newPage();
  await page.goto(pathToFileURL(join(BUILD, 'web/index.html')).href);
  await page.fill('#limit', '50');
  await page.check('input[name=policy][value=custom]');
  await page.fill('#scorer', 'out[0] = ;');
  await page.click('#run');
  await page.waitForFunction(() => document.body.dataset.state === 'error' || document.body.dataset.state === 'done', null, { timeout: 60_000 });
  assert.match(await page.textContent('#status') ?? '', /^error: .*Unexpected token/);
  await page.close();
});

test('select-service/browser: the core and the simulator as an ES module, without the page', { skip: SKIP }, async (t) => {
  const server = await serveStatic(BUILD, 0);
  t.after(() => server.close());
  const page = await browser!.newPage();
  await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/web/index.html`);
  const out = await page.evaluate(async () => {
    const url = '/browser/select-service.js'; // a variable, so tsc does not resolve it
    const m = await import(url) as typeof import('../../../src/browser.js');
    const trace = m.parseTrace('{"timestamp":0,"input_length":1024,"output_length":3,"hash_ids":[0,1]}\n'
      + '{"timestamp":9000,"input_length":1500,"output_length":3,"hash_ids":[0,1,2]}\n');
    const r = await m.simulate(trace, { policies: 'kv', fleet: { workers: 2 } });
    return { core: typeof m.SelectionCore, registry: typeof m.PolicyRegistry, blocks: r.policies[0].blocks, cached: r.policies[0].cached_blocks };
  });
  assert.deepEqual(out, { core: 'function', registry: 'function', blocks: 5, cached: 2 });
  await page.close();
});
