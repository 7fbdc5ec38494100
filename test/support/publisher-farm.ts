/**
 * A child process holding many KV-event publishers (libzmq XPUBs on 127.0.0.1), so that a test
 * can connect thousands of subscribers without this process's own descriptors counting against
 * the test's (each accepted connection is a descriptor on the publisher side).
 *
 * `node publisher-farm.js N` binds N publishers, prints one JSON line with their endpoints, then
 * answers line commands on stdin: `subs` -> `subs <total subscriptions>`, `publish <seq>` -> every
 * publisher sends one empty batch with that sequence number -> `published <seq>`.
 */
import * as zmq from 'zeromq';
import { createInterface } from 'node:readline';
import { seqFrame } from '../../src/service/kv-events/frames.js';
import { batch } from './kv-batches.js';

const n = Number(process.argv[2] ?? '1');
const pubs: zmq.XPublisher[] = [];
let subs = 0;
for (let i = 0; i < n; i++) {
  const pub = new zmq.XPublisher({ linger: 0, sendHighWaterMark: 0 });
  pub.verbosity = 'allSubs';
  await pub.bind('tcp://127.0.0.1:*');
  void (async () => { try { for await (const [m] of pub) if (m[0] === 1) subs++; } catch { /* closed */ } })();
  pubs.push(pub);
}
process.stdout.write(`${JSON.stringify(pubs.map((p) => p.lastEndpoint))}\n`);
const empty = batch([]);
for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, arg] = line.trim().split(' ');
  if (cmd === 'subs') process.stdout.write(`subs ${subs}\n`);
  else if (cmd === 'publish') {
    for (const p of pubs) await p.send(['kv-events', seqFrame(BigInt(arg)), empty]);
    process.stdout.write(`published ${arg}\n`);
  }
}
for (const p of pubs) p.close();
