/**
 * The host lock in tests (ipam-plugin/host/lock.ts is flock(2) through bun:ffi, Bun only):
 *  - {@link holdLock}: a real Bun process (host/lock-holder.ts) holding the lock on a file;
 *  - {@link logged}: resolves once the plugin's log file has a line, e.g. "host lock held by
 *    another process: waiting", so a test knows an ADD is waiting for the lock;
 *  - {@link processLock}: for dispatcher tests run in-process under Node, which has no flock —
 *    a mutex per path inside the test process. It serialises what the real lock serialises
 *    between processes; the real lock itself is tested with processes (host/lock.test.ts).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DirectDeps as Deps } from '../../../ipam-plugin/direct.ts';
import type { HostLock } from '../../../ipam-plugin/host/lock.ts';
import { repoRoot } from './plugin-exe.ts';

export const bun = join(repoRoot, 'node_modules', '.bin', 'bun');
export const lockHolderScript = join(repoRoot, 'test', 'plugin', 'host', 'lock-holder.ts');

/** A Bun lock-holder process; `lines` collects what it printed. */
export interface LockProcess {
  readonly child: ChildProcess;
  readonly lines: string[];
  /** Resolves with the first printed line matching `re` (rejects if the process exits first). */
  next(re: RegExp): Promise<string>;
  /** SIGKILLs it (if alive) and waits for the exit. */
  kill(): Promise<void>;
}

/** Starts `bun lock-holder.ts args…` (see that file for the arguments). */
export function lockProcess(args: readonly string[]): LockProcess {
  const child = spawn(bun, [lockHolderScript, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiting: { re: RegExp; resolve: (l: string) => void; reject: (e: Error) => void }[] = [];
  let buf = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (s: string) => {
    buf += s;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      for (const w of waiting.splice(0)) {
        if (w.re.test(line)) w.resolve(line);
        else waiting.push(w);
      }
    }
  });
  // 'close', not 'exit': stdout may still hold the last lines when the process has exited
  let closed = false;
  child.on('close', (code, signal) => {
    closed = true;
    for (const w of waiting.splice(0))
      w.reject(
        new Error(
          `lock-holder exited (${code ?? signal}) before /${w.re.source}/; printed ${JSON.stringify(lines)}`,
        ),
      );
  });
  return {
    child,
    lines,
    next: (re) => {
      const seen = lines.find((l) => re.test(l));
      if (seen !== undefined) return Promise.resolve(seen);
      if (closed)
        return Promise.reject(new Error(`lock-holder already exited; printed ${JSON.stringify(lines)}`));
      return new Promise((resolve, reject) => waiting.push({ re, resolve, reject }));
    },
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await once(child, 'exit');
    },
  };
}

/** A Bun process holding the lock on `path` until killed; resolves once it holds it. */
export async function holdLock(path: string): Promise<LockProcess> {
  const p = lockProcess([path]);
  assert.match(await p.next(/^held|^error/), /^held/);
  return p;
}

/**
 * Resolves with the first line of the JSON-lines log `file` whose `msg` matches `re` once it is
 * written (checks the file every 20 ms: a condition, not a delay).
 */
export async function logged(file: string, re: RegExp, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      // not written yet
    }
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const doc = JSON.parse(line) as Record<string, unknown>;
      if (re.test(String(doc.msg))) return doc;
    }
    if (Date.now() > until) throw new Error(`no log line /${re.source}/ in ${file} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const held = new Map<string, Promise<void>>();

/** Dispatcher deps: an in-process mutex per lock path (see the file comment). */
export const processLock: Pick<Deps, 'lock'> = {
  lock: async (path, _timeoutMs, onWait) => {
    let waited = false;
    if (held.has(path)) onWait();
    while (held.has(path)) {
      waited = true;
      await held.get(path);
    }
    let release: () => void = () => undefined;
    held.set(path, new Promise<void>((r) => (release = r)));
    let done = false;
    const lock: HostLock = {
      waited,
      release: () => {
        if (!done) {
          done = true;
          held.delete(path);
          release();
        }
        return Promise.resolve();
      },
    };
    return lock;
  },
};
