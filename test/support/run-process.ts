/** Runs a command to its end for tests: output collected, killed after `timeoutMs`, never rejects. */
import { spawn } from 'node:child_process';

export interface RunResult { code: number | null; stdout: string; stderr: string }

export function runProcess(cmd: string, args: readonly string[], cwd: string, timeoutMs: number,
  env: NodeJS.ProcessEnv = process.env): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => { stderr += `\n[killed after ${timeoutMs} ms]`; child.kill('SIGKILL'); }, timeoutMs);
    child.once('error', (err) => { stderr += String(err); });
    child.once('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

/**
 * The parent's environment without the router's and the service's variables (`DYN_*`,
 * `SELECT_SERVICE_*`), plus `extra`: a service a test starts sees only what the test gives it.
 */
export function serviceFreeEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('DYN_') && !k.startsWith('SELECT_SERVICE_')) env[k] = v;
  return { ...env, ...extra };
}
