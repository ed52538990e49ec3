/**
 * JSON logs for the long-running daemons (node agent, cluster controller) through winston, with
 * field names shared by every component (as Cilium's `logfields`): a log line is one
 * JSON object `{"level","message","timestamp","component", ...fields}` on stdout.
 *
 *   const log = createLogger({ component: 'agent', level: 'info' });
 *   log.info('block claimed', { [F.node]: 'n1', [F.block]: '10-244-0-0-26' });
 *   log.warn('watch failed', errorFields(error));
 */
import type { Writable } from 'node:stream';
import winston from 'winston';

/** Field names, one meaning each; use these keys, never ad-hoc spellings. */
export const F = {
  component: 'component',
  node: 'node',
  pool: 'pool',
  block: 'block',
  cidr: 'cidr',
  family: 'family',
  handle: 'handle',
  namespace: 'namespace',
  pod: 'pod',
  resource: 'resource',
  path: 'path',
  count: 'count',
  free: 'free',
  watermark: 'watermark',
  durationMs: 'durationMs',
  reason: 'reason',
  error: 'error',
  errorName: 'errorName',
  signal: 'signal',
  address: 'address',
} as const;

export type Logger = winston.Logger;

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LoggerOptions {
  /** Fills the `component` field of every line, e.g. "agent". */
  component: string;
  /** Default "info". */
  level?: LogLevel;
  /** Where lines go; default process.stdout. Tests pass a stream of their own. */
  stream?: Writable;
}

/** A winston logger writing one JSON object per line. */
export function createLogger(options: LoggerOptions): Logger {
  return winston.createLogger({
    level: options.level ?? 'info',
    levels: winston.config.npm.levels,
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    defaultMeta: { [F.component]: options.component },
    transports: [new winston.transports.Stream({ stream: options.stream ?? process.stdout })],
  });
}

/** The fields describing a caught error: `error` (message) and `errorName` (its class name). */
export function errorFields(error: unknown): Record<string, string> {
  if (error instanceof Error) return { [F.error]: error.message, [F.errorName]: error.name };
  return { [F.error]: String(error), [F.errorName]: typeof error };
}
