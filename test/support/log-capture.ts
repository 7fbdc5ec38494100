/** A {@link Logger} that keeps every line, for tests that assert what the service logs. */
import type { Logger } from '../../src/service/logger.js';

/** One logged line: its level, the fields object and the message. */
export interface LogLine { level: 'info' | 'warn' | 'error' | 'debug'; obj: Record<string, unknown>; msg: string }

/** A logger whose lines are in `lines`; `warnings(pattern)` are the warning messages matching it. */
export function captureLog(): Logger & { lines: LogLine[]; warnings(pattern?: RegExp): string[] } {
  const lines: LogLine[] = [];
  const at = (level: LogLine['level']) => (obj: unknown, msg = ''): void => {
    lines.push({ level, obj: (typeof obj === 'object' && obj !== null ? obj : {}) as Record<string, unknown>, msg });
  };
  return {
    lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug'),
    warnings: (pattern = /./) => lines.filter((l) => l.level === 'warn' && pattern.test(l.msg)).map((l) => l.msg),
  };
}

/** A clock the test moves (milliseconds). */
export class ManualClock {
  t = 0;
  now(): number { return this.t; }
}
