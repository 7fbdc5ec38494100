/**
 * A grid pool thread (src/grid-pool.ts): runs the grid tasks it is sent, one at a time, and posts
 * each result back with the task's index. A task that throws is posted as its error message.
 */
import { readFileSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { runGridTask, setTraceFileReader, type GridTask } from './sim/grid.js';

setTraceFileReader((path) => readFileSync(path, 'utf8'));

/** Pool -> thread. */
export interface TaskMessage { index: number; task: GridTask }
/** Thread -> pool. */
export type ResultMessage = { index: number; result: Awaited<ReturnType<typeof runGridTask>> } | { index: number; error: string };

const port = parentPort;
if (port) {
  port.on('message', (m: TaskMessage) => {
    runGridTask(m.task).then(
      (result) => port.postMessage({ index: m.index, result } satisfies ResultMessage),
      (err: unknown) => port.postMessage({ index: m.index, error: err instanceof Error ? err.message : String(err) } satisfies ResultMessage),
    );
  });
}
