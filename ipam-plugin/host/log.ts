/**
 * A lean structured logger: JSON lines to the config's `logFile` (at `logLevel`) and to
 * stderr (warn and above). Never stdout (it carries the one result document) and never stdin
 * (it can hold credentials). Winston was measured and rejected for the start-up
 * budget (docs/design-plugin.md "Start-up budget"). Logging never fails a CNI operation.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { Level, Logger, LoggerOptions } from 'blockipam/core/cni';

export type { Logger, LoggerOptions } from 'blockipam/core/cni';

const rank: Readonly<Record<Level, number>> = { error: 0, warn: 1, info: 2, debug: 3 };

/** Creates a logger; a log file that cannot be opened is reported once on stderr and skipped. */
export function createLogger(o: LoggerOptions): Logger {
  const context: Record<string, unknown> = { pid: process.pid };
  const now = o.now ?? (() => new Date());
  let fd: number | undefined;
  let fileBroken = o.file === undefined;
  const toFile = (line: string): void => {
    if (fileBroken) return;
    try {
      if (fd === undefined) {
        fd = openSync(o.file as string, 'a');
      }
      writeSync(fd, line);
    } catch (e) {
      fileBroken = true;
      o.stderr.write(`blockipam: cannot write log file ${o.file}: ${(e as Error).message}\n`);
    }
  };
  return {
    log(level, msg, fields) {
      const toErr = rank[level] <= rank[o.stderrLevel ?? 'warn'];
      const toF = rank[level] <= rank[o.level ?? 'info'];
      if (!toErr && !toF) return;
      const line = `${JSON.stringify({ time: now().toISOString(), level, msg, ...context, ...fields })}\n`;
      if (toF) toFile(line);
      if (toErr) o.stderr.write(line);
    },
    bind(fields) {
      Object.assign(context, fields);
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
