/**
 * The process's open-file limit (RLIMIT_NOFILE), read from /proc/self/limits on Linux (Node has
 * no getrlimit). Every KV-event rank holds one connection, so this bounds how many ranks one
 * process can follow; the service logs it at start-up and refuses ranks beyond it with a clear
 * reason instead of failing on EMFILE.
 */
import { readFileSync } from 'node:fs';

/** Descriptors kept for everything but KV-event connections (HTTP clients, replica sync, files). */
export const FD_RESERVE = 512;

/** `{ soft, hard }` (Infinity for unlimited), or null where the limit cannot be read. */
export function openFileLimit(limitsText?: string): { soft: number; hard: number } | null {
  let text = limitsText;
  if (text === undefined) {
    try { text = readFileSync('/proc/self/limits', 'utf8'); } catch { return null; }
  }
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(text);
  if (!m) return null;
  const num = (v: string): number => (v === 'unlimited' ? Infinity : Number(v));
  const soft = num(m[1]), hard = num(m[2]);
  return Number.isNaN(soft) || Number.isNaN(hard) ? null : { soft, hard };
}

/** KV-event ranks one process can follow under its soft limit (null: unknown, no cap). */
export function rankCapacity(limit: { soft: number } | null): number | null {
  if (limit === null || limit.soft === Infinity) return null;
  return Math.max(0, limit.soft - FD_RESERVE);
}
