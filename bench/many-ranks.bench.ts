/**
 * Many KV-event ranks on one service (issue 15, defect 4, moved out of the suite): W workers of
 * R ranks, each rank one connection of the service's ZMTP subscriber to one of P loopback
 * publishers in a child process, then two batches every rank must apply. Reported: time to
 * register every worker, until every rank is subscribed, until every rank applied the first
 * batch (live) and the second, and this process's memory (after a full GC) and open descriptors
 * before and once live, against its open-file limit (each rank costs one descriptor).
 *
 *   npm run bench -- many-ranks [--workers=1250] [--ranks=8] [--publishers=20] [--deadline-s=600]
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { runManyRanks } from '../test/support/many-ranks.js';
import { openFileLimit } from '../src/service/fd-limit.js';

// a full collection before each memory reading: the figures are what the ranks keep, not garbage
v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const arg = (name: string, d: number): number => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? d);
const workers = arg('workers', 1250), ranks = arg('ranks', 8), publishers = arg('publishers', 20);
const cleanup: (() => void | Promise<void>)[] = [];
const mib = (n: number): string => `${(n / 2 ** 20).toFixed(0)} MiB`;
const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

try {
  const r = await runManyRanks({ after: (fn) => cleanup.push(fn) }, { workers, ranks, publishers, deadlineMs: arg('deadline-s', 600) * 1000, beforeMemory: gc });
  const limit = openFileLimit();
  const [b, l] = [r.memoryBefore, r.memoryLive];
  console.log(`ranks=${r.ranks} (workers=${workers} x ranks=${ranks}, publishers=${publishers}), open-file limit ${limit ? `${limit.soft} soft / ${limit.hard} hard` : 'unknown'}`);
  console.log('| phase | time |');
  console.log('|---|---|');
  console.log(`| register every worker (POST /workers in process) | ${s(r.registerMs)} |`);
  console.log(`| ... until every rank is subscribed (from the first registration) | ${s(r.connectMs)} |`);
  console.log(`| first batch sent -> applied by every rank (live) | ${s(r.liveMs)} |`);
  console.log(`| second batch sent -> applied by every rank | ${s(r.secondMs)} |`);
  console.log('');
  console.log('| memory | before | live | per rank |');
  console.log('|---|---|---|---|');
  for (const k of ['rss', 'heapUsed', 'external', 'arrayBuffers'] as const) {
    console.log(`| ${k} | ${mib(b[k])} | ${mib(l[k])} | ${((l[k] - b[k]) / r.ranks / 1024).toFixed(1)} KiB |`);
  }
  if (r.fdsBefore !== null && r.fdsLive !== null) console.log(`| open descriptors | ${r.fdsBefore} | ${r.fdsLive} | ${((r.fdsLive - r.fdsBefore) / r.ranks).toFixed(2)} |`);
} finally {
  for (const fn of cleanup.reverse()) await fn();
}
