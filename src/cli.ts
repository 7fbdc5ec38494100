#!/usr/bin/env node
/**
 * `select-service` command. Stage 1 (foundation): serves liveness only (`GET /health`) on
 * 0.0.0.0:8092 while the selection routes are being built (see README "Status").
 */
import Fastify from 'fastify';
import { getWasm } from './core/wasm.js';

const VERSION = '0.1.0';

function usage(): string {
  return [
    'usage: select-service [--port N] [--host ADDR] [--help] [--version]',
    '',
    '  --port N      HTTP port (default 8092)',
    '  --host ADDR   bind address (default 0.0.0.0)',
  ].join('\n');
}

async function main(argv: string[]): Promise<void> {
  let port = 8092;
  let host = '0.0.0.0';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') { console.log(usage()); return; }
    if (a === '--version' || a === '-V') { console.log(VERSION); return; }
    if (a === '--port' || a === '--host') {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      if (a === '--port') {
        port = Number(v);
        if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: invalid port ${v}`);
      } else host = v;
      continue;
    }
    throw new Error(`unknown argument ${a}\n${usage()}`);
  }
  getWasm(); // fail fast if the wasm core cannot be instantiated
  const app = Fastify({ logger: true });
  app.get('/health', async () => ({ status: 'ok' }));
  const stop = async (): Promise<void> => { await app.close(); process.exit(0); };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  await app.listen({ port, host });
}

main(process.argv.slice(2)).catch((e: unknown) => {
  console.error(`select-service: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(2);
});
