/**
 * The plugin's entry point as a function: takes `{env, readStdin, stdout,
 * stderr}` and returns the exit code, so the whole protocol is testable without spawning.
 * Order of checks as in the Go skel: CNI_COMMAND → CNI_* variables (4) → stdin JSON (6) →
 * cniVersion (1) → command gate (1) → schema (7). Exactly one JSON document is written to stdout:
 * the ADD result, the VERSION answer, or the error object; nothing else ever is.
 */
import { isKubeconfigError } from 'blockipam/core/kube';
import type { BackendFactory, Backend } from './backend/port.ts';
import { isBackendUnavailableError } from './backend/port.ts';
import { add } from './commands/add.ts';
import { check } from './commands/check.ts';
import { del } from './commands/del.ts';
import { gc } from './commands/gc.ts';
import { status } from './commands/status.ts';
import { version } from './commands/version.ts';
import type { Command, CommandContext } from './commands/context.ts';
import { parseEnv, type CniCommand, type Env } from './cni/env.ts';
import { apiFailure, CniCode, CniError, toErrorDocument } from './cni/errors.ts';
import {
  acquireHostLock,
  isHostLockFree,
  isLockFileError,
  isLockTimeoutError,
  type HostLock,
} from './host/lock.ts';
import { createLogger, type Logger, type Sink } from './host/log.ts';
import { parseNetConf } from './cni/netconf.ts';
import {
  currentVersion,
  isSupportedVersion,
  requireCommandAllowed,
  supportedVersions,
} from './cni/versions.ts';

export interface Io {
  readonly env: Env;
  /** Reads all of stdin (called at most once; never for VERSION unless needed). */
  readonly readStdin: () => string;
  readonly stdout: Sink;
  readonly stderr: Sink;
}

export interface Deps {
  readonly backend: BackendFactory;
  /**
   * Takes the host lock on netconf's `ipam.lockFile`. Default: the flock(2) lock
   * {@link acquireHostLock} (Bun only; in-process tests under Node inject one).
   */
  readonly lock?: (
    path: string,
    timeoutMs: number,
    holderNice: number,
    beforeWait?: () => void,
  ) => Promise<HostLock>;
  /** Default: {@link isHostLockFree}. */
  readonly lockFree?: (path: string) => Promise<boolean>;
}

const commands: Readonly<Record<Exclude<CniCommand, 'VERSION'>, Command>> = {
  ADD: add,
  DEL: del,
  CHECK: check,
  GC: gc,
  STATUS: status,
};

const about = `CNI blockipam plugin\nCNI protocol versions supported: ${supportedVersions.join(', ')}\n`;

/** Runs one CNI invocation. @returns the process exit code (0 success, 1 failure) */
export async function dispatch(io: Io, deps: Deps): Promise<number> {
  if ((io.env.CNI_COMMAND ?? '') === '') {
    io.stderr.write(about);
    return 0;
  }
  /** ms since process start when dispatch began (Node's performance.now origin). */
  const startMs = performance.now();
  /** CPU this process used before dispatch (runtime start-up, module load), µs. */
  const startCpu = process.cpuUsage();
  let stdin: string | undefined;
  const readStdin = (): string => (stdin ??= io.readStdin());
  let log: Logger | undefined;
  let backend: Backend | undefined;
  try {
    const env = parseEnv(io.env);
    if (env.command === 'VERSION') return emit(io, version(safeRead(readStdin)));
    const conf = parseNetConf(readStdin());
    requireCommandAllowed(env.command, conf.cniVersion);
    log = createLogger({
      stderr: io.stderr,
      ...(conf.logFile ? { file: conf.logFile } : {}),
      level: conf.logLevel,
    });
    log.bind({ cmd: env.command, network: conf.name, containerID: env.containerID, ifname: env.ifname });
    const ctx: CommandContext = {
      env,
      conf,
      log,
      backend: async () => (backend ??= await deps.backend(conf, env.command)),
      lock: (beforeWait) =>
        (deps.lock ?? acquireHostLock)(conf.lockFile, conf.lockTimeoutMs, conf.lockHolderNice, beforeWait),
      lockFree: () => (deps.lockFree ?? isHostLockFree)(conf.lockFile),
    };
    const out = await commands[env.command](ctx);
    log.log('info', 'done', {
      ...backend?.stats?.(),
      startMs: Math.round(startMs),
      totalMs: Math.round(performance.now()),
      cpuStartMs: cpuMs(startCpu),
      cpuMs: cpuMs(process.cpuUsage()),
    });
    return out === undefined ? 0 : emit(io, out);
  } catch (e) {
    const err = asCniError(e);
    // The backend's counters too: e.g. `rollbackFailed`, what a failed dual-stack rollback left.
    log?.log('error', err.message, { code: err.code, details: err.details, ...backend?.stats?.() });
    io.stdout.write(`${JSON.stringify(toErrorDocument(err, errorVersion(stdin)))}\n`);
    return 1;
  } finally {
    await backend?.close().catch(() => undefined);
    log?.close();
  }
}

/** User + system CPU time of a {@link process.cpuUsage} reading, ms with one decimal. */
export const cpuMs = (u: NodeJS.CpuUsage): number => Math.round((u.user + u.system) / 100) / 10;

function emit(io: Io, doc: Record<string, unknown>): number {
  io.stdout.write(`${JSON.stringify(doc)}\n`);
  return 0;
}

function safeRead(read: () => string): string {
  try {
    return read();
  } catch {
    return '';
  }
}

/** The error document's cniVersion: the request's when it named a supported one. */
function errorVersion(stdin: string | undefined): string {
  try {
    const v = (JSON.parse(stdin ?? '') as { cniVersion?: unknown } | null)?.cniVersion;
    return isSupportedVersion(v) ? v : currentVersion;
  } catch {
    return currentVersion;
  }
}

/**
 * Transient failures become code 11 (try again later); others keep or get their code. A
 * KubeconfigError here comes from a file read at request time (the user's tokenFile): like a
 * kubeconfig not yet readable at load (kube-backend.ts), it is 11, since the node agent may
 * write it after the runtime starts calling.
 */
function asCniError(e: unknown): CniError {
  if (e instanceof CniError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  if (isBackendUnavailableError(e)) return new CniError(CniCode.tryAgainLater, 'datastore unreachable', msg);
  if (isKubeconfigError(e)) return new CniError(CniCode.tryAgainLater, 'kubeconfig unavailable', msg);
  if (isLockTimeoutError(e)) return new CniError(CniCode.tryAgainLater, 'host lock busy', msg);
  if (isLockFileError(e))
    return new CniError(CniCode.ioFailure, 'host lock file unusable (ipam.lockFile)', msg);
  if (e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError')) {
    return new CniError(CniCode.tryAgainLater, 'time budget exceeded', msg);
  }
  if (e instanceof Error && (e as NodeJS.ErrnoException).code === 'EIO')
    return new CniError(CniCode.ioFailure, 'I/O failure', msg);
  return apiFailure(e) ?? new CniError(CniCode.internal, 'internal error', msg);
}
