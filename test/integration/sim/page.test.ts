/**
 * The simulator page in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core;
 * never a downloaded browser): opened from the file system, it runs a short simulation of the
 * bundled sample in its Web Worker and renders the table and charts, exports CSV, generates a
 * workload and runs it on a named fleet at a load, sweeps a knob and cancels a run; its form fits
 * the window at 1280, 1400 and 1920 px (checked by layout boxes); the `select-service/browser`
 * bundle works as an ES module without the page.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
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

/** The page from the file system, ready, with its script errors collected. */
async function openPage(width = 1300) {
  const page = await browser!.newPage({ viewport: { width, height: 1000 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(pathToFileURL(join(BUILD, 'web/index.html')).href);
  await page.waitForFunction(() => document.body.dataset.state === 'ready');
  return { page, errors };
}

test('the page runs a simulation from file:// and renders the table and charts', { skip: SKIP }, async () => {
  const { page, errors } = await openPage();
  assert.match(await page.textContent('#sample-size') ?? '', /^2000 requests$/);
  assert.equal(await page.isVisible('#load-section'), false, 'no empty per-worker heading before the first run');
  assert.equal(await page.isDisabled('#csv'), true);
  await page.fill('#limit', '400');
  await page.check('input[name=policy][value=session_affinity]');
  await page.click('#run');
  await page.waitForFunction(() => document.body.dataset.state !== 'running' && document.body.dataset.state !== 'ready', null, { timeout: 120_000 });
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done', await page.textContent('#status') ?? '');
  const rows = await page.$$eval('#metrics tbody tr', (trs) => trs.map((tr) => ({
    policy: (tr as HTMLElement).dataset.policy, hit: Number((tr as HTMLElement).dataset.hitRate),
    ttft: Number((tr as HTMLElement).dataset.ttftP50), cells: Array.from(tr.querySelectorAll('td'), (td) => td.textContent),
  })));
  assert.deepEqual(rows.map((r) => r.policy), ['ttft', 'kv', 'llmd', 'sglang_cache_aware', 'ray_prefix_affinity', 'round_robin', 'session_affinity']);
  for (const r of rows) {
    assert.ok(r.hit > 0 && r.hit < 0.5, `${r.policy} hit rate ${r.hit}`);
    assert.ok(r.ttft > 10 && r.ttft < 60_000, `${r.policy} TTFT p50 ${r.ttft} ms`);
    assert.match(r.cells[1] ?? '', /^\d+\.\d%$/);
  }
  const paths = (sel: string) => page.$$eval(`${sel} path.series`, (ps) => ps.map((p) => (p.getAttribute('d') ?? '').length));
  const hit = await paths('#chart-hit');
  const ttft = await paths('#chart-ttft');
  assert.equal(hit.length, 7);
  assert.equal(ttft.length, 7);
  for (const d of [...hit, ...ttft]) assert.ok(d > 100, 'every series drew a line');
  assert.equal(await page.$$eval('#chart-load svg', (s) => s.length), 7);
  assert.equal((await paths('#chart-load')).length, 7 * 8);
  assert.equal(await page.isVisible('#load-section'), true);
  // one y scale for every per-worker chart: the same tick labels everywhere
  const yTicks = await page.$$eval('#chart-load svg', (svgs) => svgs.map((s) => Array.from(s.querySelectorAll('text.tick[text-anchor=end]'), (t) => t.textContent).join(' ')));
  assert.equal(new Set(yTicks).size, 1, yTicks.join(' | '));
  // hover shows values: every series has markers with a title
  const title = await page.textContent('#chart-hit g[data-markers="kv"] circle title');
  assert.match(title ?? '', /^kv: \d+, \d+%$/);
  // CSV export of the table
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#csv')]);
  assert.equal(download.suggestedFilename(), 'simulation.csv');
  const csv = readFileSync(await download.path(), 'utf8').trim().split('\n');
  assert.match(csv[0], /^policy,hit_rate,block_hit_rate,ttft_p50_ms,/);
  assert.deepEqual(csv.slice(1).map((l) => l.split(',')[0]), ['ttft', 'kv', 'llmd', 'sglang_cache_aware', 'ray_prefix_affinity', 'round_robin', 'session_affinity']);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the page generates a workload on a named fleet and runs it at a load of its measured saturation', { skip: SKIP }, async () => {
  const { page, errors } = await openPage();
  assert.match(await page.textContent('#workload-help') ?? '', /^groups of requests that share a long system prompt.*Knobs: groups \(16\), prefix \(2048\),/);
  await page.selectOption('#workload', 'doc_qa');
  assert.equal(await page.isChecked('#use-workload'), true, 'choosing a workload selects it as the source');
  assert.match(await page.textContent('#workload-help') ?? '', /documents \(16\)/);
  await page.selectOption('#workload', 'system_prompt');
  await page.fill('#workload-knobs', 'requests=300:groups=4');
  await page.fill('#load', '0.8');
  await page.selectOption('#fleet', 'mixed');
  assert.equal(await page.inputValue('#workers'), '8');
  assert.equal(await page.isDisabled('#workers'), true, 'a named fleet sets the shape');
  assert.equal(await page.isDisabled('#profile'), true, 'the mixed fleet sets each worker\'s profile');
  await page.click('#run');
  await page.waitForFunction(() => document.body.dataset.state !== 'running' && document.body.dataset.state !== 'ready', null, { timeout: 120_000 });
  const status = await page.textContent('#status') ?? '';
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done', status);
  assert.match(status, /^300 requests × 6 policies in [\d.]+ s \(8 x 1 rank\(s\), 4 x llama3\.1-8b-h100 \+ 4 x llama3\.1-8b-a100, load 0\.8 of saturation [\d.]+ req\/s \(kv, \d passes\)\)$/);
  const hits = await page.$$eval('#metrics tbody tr', (trs) => trs.map((tr) => Number((tr as HTMLElement).dataset.hitRate)));
  assert.ok(hits.every((h) => h > 0.3), `four shared 2,048-token prompts: hit rates ${hits}`);
  // bad settings are reported before anything runs
  await page.fill('#workload-knobs', 'colour=2');
  await page.click('#run');
  await page.waitForFunction(() => document.body.dataset.state === 'error');
  assert.match(await page.textContent('#status') ?? '', /^error: workload "system_prompt:colour=2": system_prompt has no knob "colour"/);
  await page.fill('#workload-knobs', '');
  await page.fill('#limit', '100');
  await page.click('#run');
  await page.waitForFunction(() => /first N requests/.test(document.getElementById('status')?.textContent ?? ''));
  await page.selectOption('#fleet', '');
  assert.equal(await page.isDisabled('#workers'), false);
  assert.equal(await page.isDisabled('#profile'), false);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the form fits at 1280, 1400 and 1920 px: no panel overlaps another, every control lies inside its panel', { skip: SKIP }, async () => {
  for (const width of [1280, 1400, 1920]) {
    const { page, errors } = await openPage(width);
    const layout = await page.evaluate(() => {
      const box = (e: Element) => { const r = e.getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top, bottom: r.bottom }; };
      const name = (e: Element) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}${(e as HTMLInputElement).value && e.tagName === 'INPUT' && (e as HTMLInputElement).type === 'checkbox' ? `[${(e as HTMLInputElement).value}]` : ''}`;
      const panels = Array.from(document.querySelectorAll('#form fieldset'), (f) => ({
        legend: f.querySelector('legend')?.textContent ?? '', box: box(f), overflow: f.scrollWidth - f.clientWidth,
        controls: Array.from(f.querySelectorAll('input, select, textarea, label'), (c) => ({ name: name(c), box: box(c) })),
      }));
      const wide = Array.from(document.querySelectorAll('body *'), (e) => ({ name: name(e), right: e.getBoundingClientRect().right }))
        .filter((e) => e.right > innerWidth + 0.5);
      return { panels, wide, viewport: innerWidth, page: document.documentElement.scrollWidth };
    });
    const at = `at ${width} px`;
    assert.equal(layout.viewport, width);
    assert.ok(layout.page <= width, `${at}: the page is ${layout.page} px wide`);
    assert.deepEqual(layout.wide.map((e) => e.name), [], `${at}: nothing reaches past the right edge`);
    assert.ok(layout.panels.length >= 6, `${at}: ${layout.panels.length} panels`);
    const EPS = 0.5; // sub-pixel rounding
    for (const [i, a] of layout.panels.entries()) {
      assert.ok(a.overflow <= 0, `${at}: ${a.legend} overflows its box by ${a.overflow} px`);
      for (const c of a.controls) {
        const inside = c.box.left >= a.box.left - EPS && c.box.right <= a.box.right + EPS && c.box.top >= a.box.top - EPS && c.box.bottom <= a.box.bottom + EPS;
        assert.ok(inside, `${at}: ${c.name} ${JSON.stringify(c.box)} is not inside ${a.legend} ${JSON.stringify(a.box)}`);
      }
      for (const b of layout.panels.slice(i + 1)) {
        const overlap = Math.min(a.box.right, b.box.right) - Math.max(a.box.left, b.box.left) > EPS
          && Math.min(a.box.bottom, b.box.bottom) - Math.max(a.box.top, b.box.top) > EPS;
        assert.ok(!overlap, `${at}: ${a.legend} ${JSON.stringify(a.box)} overlaps ${b.legend} ${JSON.stringify(b.box)}`);
      }
    }
    assert.equal(await page.isChecked('input[name=policy][value=ttft]'), true, 'ttft has its checkbox, checked');
    assert.deepEqual(errors, []);
    await page.close();
  }
});

test('a sweep draws TTFT and hit rate against the swept value; Cancel stops a run and the next one works', { skip: SKIP }, async () => {
  const { page, errors } = await openPage();
  // cancel: a long sweep, stopped while it runs
  await page.selectOption('#sweep-knob', 'speed');
  await page.fill('#sweep-values', '1,2,4');
  await page.click('#run');
  await page.waitForFunction(() => /requests$/.test(document.getElementById('status')?.textContent ?? ''), null, { timeout: 60_000 });
  assert.equal(await page.isEnabled('#cancel'), true);
  await page.click('#cancel');
  await page.waitForFunction(() => document.body.dataset.state === 'cancelled');
  assert.equal(await page.isDisabled('#cancel'), true);
  // then a short sweep runs to the end in a fresh worker
  await page.fill('#limit', '300');
  await page.fill('#sweep-values', '1,4');
  await page.click('#run');
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state ?? ''), null, { timeout: 120_000 });
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done', await page.textContent('#status') ?? '');
  const rows = await page.$$eval('#metrics tbody tr', (trs) => trs.map((tr) => `${(tr as HTMLElement).dataset.value} ${(tr as HTMLElement).dataset.policy}`));
  assert.deepEqual(rows, ['1 ttft', '1 kv', '1 llmd', '1 sglang_cache_aware', '1 ray_prefix_affinity', '1 round_robin', '4 ttft', '4 kv', '4 llmd', '4 sglang_cache_aware', '4 ray_prefix_affinity', '4 round_robin']);
  const figures = await page.$$eval('#chart-sweep [data-figure]', (fs) => fs.map((f) => (f as HTMLElement).dataset.figure));
  assert.deepEqual(figures, ['sweep-speed-ttft-p50', 'sweep-speed-ttft-p90', 'sweep-speed-hit-rate']);
  assert.equal(await page.$$eval('#chart-sweep path.series', (ps) => ps.length), 3 * 6);
  assert.equal(await page.isVisible('#load-section'), false);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#csv')]);
  assert.equal(download.suggestedFilename(), 'sweep-speed.csv');
  const csv = readFileSync(await download.path(), 'utf8').trim().split('\n');
  assert.match(csv[0], /^speed,policy,hit_rate,/);
  assert.equal(csv.length, 1 + 2 * 6);
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

test('"clients send each request\'s output length" unchecked: the policies see no expected_output_tokens', { skip: SKIP }, async () => {
  const page = await browser!.newPage();
  await page.goto(pathToFileURL(join(BUILD, 'web/index.html')).href);
  await page.fill('#limit', '300');
  for (const box of await page.$$('input[name=policy]:checked')) await box.uncheck();
  await page.check('input[name=policy][value=custom]');
  // told the output length: the least busy rank; not told: always the first (a queue on one rank)
  await page.fill('#scorer', 'const said = ctx.expectedOutputTokens() !== undefined; for (let i = 0; i < cands.length; i++) out[i] = said ? cands[i].activeRequests() : i;');
  const p50 = async (): Promise<number> => {
    await page.click('#run');
    await page.waitForFunction(() => document.body.dataset.state === 'error' || document.body.dataset.state === 'done', null, { timeout: 60_000 });
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'done', await page.textContent('#status') ?? '');
    return Number(await page.getAttribute('#metrics tbody tr[data-policy=custom]', 'data-ttft-p50'));
  };
  assert.equal(await page.isChecked('#expected-output'), true, 'sent by default, as the CLI');
  const told = await p50();
  await page.uncheck('#expected-output');
  const untold = await p50();
  assert.ok(untold > 5 * told, `one rank for all when untold: TTFT p50 ${untold} ms against ${told} ms spread out`);
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
