/**
 * Issue 15, defect 4: at most 1,022 KV-event ranks (one libzmq SUB each, under ZeroMQ's default
 * 1,023-socket context). Each rank now holds one connection of our own subscriber, so a fleet past
 * that cap (1,100 ranks: 275 workers of 4 ranks, 20 loopback publishers in a child process)
 * registers, connects and stays live. The 10,000-rank run, with its times and memory, is a
 * benchmark: `npm run bench -- many-ranks`.
 */
import { test } from 'node:test';
import { runManyRanks } from '../../support/many-ranks.js';

test('defect 4: 1,100 KV-event ranks (past libzmq\'s 1,023-socket cap) register, connect and stay live', { timeout: 300_000 }, async (t) => {
  await runManyRanks(t, { workers: 275, ranks: 4, publishers: 20, deadlineMs: 120_000 });
});
