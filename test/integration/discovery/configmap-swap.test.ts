/**
 * `--workers-file` on a Kubernetes ConfigMap volume. kubelet never rewrites the visible file: the
 * volume holds `..<timestamp>/workers.json`, a `..data` symlink to that directory and
 * `workers.json -> ..data/workers.json`; an update writes a new timestamped directory, points a
 * `..data_tmp` symlink at it, renames `..data_tmp` over `..data` (atomic) and removes the old
 * directory. Nothing named `workers.json` changes in the watched directory. These tests reproduce
 * that layout and swap exactly, twice in a row: once against a real service process, and once with
 * the stat poll made too slow to matter, so the watcher alone must notice.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SelectionServiceBuilder, WorkersFileDiscovery, parseRouterConfig } from '../../../src/index.js';
import { startService } from '../../support/service-process.js';
import { eventually } from '../../support/ports.js';

const rec = (id: number) => ({ worker_id: id, model_name: 'model', endpoint: `http://worker-${id}:8000`, block_size: 4 });

/** A ConfigMap volume as kubelet lays it out, holding `workers.json`. */
class ConfigMapVolume {
  private generation = 0;
  private current = '';

  private constructor(readonly dir: string) {}

  /** The path a pod mounts and passes as `--workers-file`. */
  get file(): string { return join(this.dir, 'workers.json'); }

  static async create(t: TestContext, workers: unknown[]): Promise<ConfigMapVolume> {
    const v = new ConfigMapVolume(await mkdtemp(join(tmpdir(), 'configmap-')));
    t.after(() => rm(v.dir, { recursive: true, force: true }));
    v.current = await v.writeVersion(workers);
    await symlink(v.current, join(v.dir, '..data'));
    await symlink(join('..data', 'workers.json'), v.file);
    return v;
  }

  /** A new timestamped directory with the content (as kubelet's atomic writer names them). */
  private async writeVersion(workers: unknown[]): Promise<string> {
    const name = `..2026_12_03_10_00_0${this.generation}.${String(123456789 + this.generation++)}`;
    await mkdir(join(this.dir, name));
    await writeFile(join(this.dir, name, 'workers.json'), JSON.stringify(workers));
    return name;
  }

  /** kubelet's update: new directory, `..data_tmp` -> it, rename over `..data`, old directory removed. */
  async update(workers: unknown[]): Promise<void> {
    const next = await this.writeVersion(workers);
    await symlink(next, join(this.dir, '..data_tmp'));
    await rename(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    await rm(join(this.dir, this.current), { recursive: true });
    this.current = next;
  }
}

test('a service started with --workers-file on a ConfigMap volume follows two consecutive kubelet updates', async (t) => {
  const volume = await ConfigMapVolume.create(t, [rec(1), rec(2)]);
  const s = await startService(['--workers-file', volume.file]);
  t.after(() => s.stop());
  const ids = async () => ((await s.request('GET', '/workers')).body as { worker_id: bigint }[]).map((w) => String(w.worker_id)).join(',');
  await eventually(async () => (await ids()) === '1,2', 10_000, 'the first catalog');

  await volume.update([rec(2), rec(3)]);
  await eventually(async () => (await ids()) === '2,3', 10_000, 'the first update');
  await volume.update([rec(4)]);
  await eventually(async () => (await ids()) === '4', 10_000, 'the second update');
  assert.match(s.output(), /workers file applied/);
});

test('the watcher alone notices the ..data swap (the stat poll is an hour away)', async (t) => {
  const volume = await ConfigMapVolume.create(t, [rec(1)]);
  const service = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' })).build();
  const silent = { info() {}, warn() {}, error() {}, debug() {} };
  const d = new WorkersFileDiscovery({ path: volume.file, target: service, logger: silent, pollMs: 3_600_000 });
  t.after(async () => { d.close(); await service.shutdown(); });
  const ids = () => service.listWorkers().map((w) => String(w.worker_id)).join(',');
  await d.start();
  assert.equal(ids(), '1');

  await volume.update([rec(1), rec(5)]);
  await eventually(() => ids() === '1,5', 5000, 'the first swap');
  await volume.update([rec(6)]);
  await eventually(() => ids() === '6', 5000, 'the second swap');
  assert.equal(d.stats.applied, 3);
  assert.equal(d.stats.failed, 0);
});
