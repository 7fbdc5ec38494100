/**
 * A tiny static file server for the simulator page (`select-service simulate --serve`): GET and
 * HEAD of files under one folder, `index.html` for `/`, nothing outside the folder.
 */
import { createServer, type Server } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.json': 'application/json', '.jsonl': 'application/jsonl', '.svg': 'image/svg+xml', '.png': 'image/png',
  '.wasm': 'application/wasm', '.map': 'application/json',
};

/** Serve `root` on `host:port` (port 0 = any); resolves once listening. */
export async function serveStatic(root: string, port: number, host = '127.0.0.1'): Promise<Server> {
  const base = normalize(root + sep);
  const server = createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') { res.writeHead(405, { allow: 'GET, HEAD' }).end(); return; }
    let path: string;
    try { path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname); } catch { res.writeHead(400).end(); return; }
    const file = normalize(join(base, path.endsWith('/') ? `${path}index.html` : path));
    if (!file.startsWith(base)) { res.writeHead(403).end(); return; }
    readFile(file).then((body) => {
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'content-length': body.length });
      res.end(req.method === 'HEAD' ? undefined : body);
    }, () => { res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n'); });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => { server.off('error', reject); resolve(); });
  });
  return server;
}
