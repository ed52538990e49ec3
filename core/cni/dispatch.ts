/**
 * One CNI call as a function (docs/design-plugin.md §Start-up): takes `{env, readStdin, stdout,
 * stderr}` and returns the exit code, so the whole protocol is testable without spawning, and
 * runs where the call is served — the plugin's executable (its direct path) or the node agent
 * (the call forwarded whole over its socket: core/node-ipam/wire.ts). Who serves the IPAM
 * operations and where the log goes are injected ({@link Deps}).
 * Order of checks as in the Go skel: CNI_COMMAND → CNI_* variables (4) → stdin JSON (6) →
 * cniVersion (1) → command gate (1) → schema (7). Exactly one JSON document is written to stdout:
 * the ADD result, the VERSION answer, or the error object; nothing else ever is.
 */
import type { IpamClient } from './client.ts';
import { add } from './commands/add.ts';
import { check } from './commands/check.ts';
import { del } from './commands/del.ts';
import { gc } from './commands/gc.ts';
import { status } from './commands/status.ts';
import { version } from './commands/version.ts';
import type { Command, CommandContext } from './commands/context.ts';
import { parseEnv, type CniCommand, type Env } from './env.ts';
import { CniCode, CniError, toErrorDocument } from './errors.ts';
import type { Logger, LoggerFactory, Sink } from './log.ts';
import { parseNetConf, type NetConf } from './netconf.ts';
import { currentVersion, isSupportedVersion, requireCommandAllowed, supportedVersions } from './versions.ts';

export interface Io {
  readonly env: Env;
  /** Reads all of stdin (called at most once; never for VERSION unless needed). */
  readonly readStdin: () => string;
  readonly stdout: Sink;
  readonly stderr: Sink;
}

/** The commands that call the node IPAM (all but VERSION). */
export type IpamCommand = Exclude<CniCommand, 'VERSION'>;

export interface Deps {
  /**
   * The node IPAM client of this call, made on first use (once per call) from the validated
   * netconf: the plugin's direct path (ipam-plugin), or the node agent's service in-process
   * (block-controller's IPAM server). Its failures are CniErrors already (the client maps them).
   */
  readonly client: (conf: NetConf, command: IpamCommand, log: Logger) => Promise<IpamClient>;
  /** The call's logger, made once the netconf parsed (its `logFile`, `logLevel`). */
  readonly logger: LoggerFactory;
  /**
   * Whether the call has its process to itself (the executable): its `done` line then gives the
   * process's start-up and CPU (`startMs`, `totalMs`, `cpuStartMs`, `cpuMs`); otherwise (the
   * agent, serving many calls) the call's own `durationMs`. Default false.
   */
  readonly ownProcess?: boolean;
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
  let client: IpamClient | undefined;
  try {
    const env = parseEnv(io.env);
    if (env.command === 'VERSION') return emit(io, version(safeRead(readStdin)));
    const conf = parseNetConf(readStdin());
    requireCommandAllowed(env.command, conf.cniVersion);
    const command = env.command;
    log = deps.logger({
      stderr: io.stderr,
      ...(conf.logFile ? { file: conf.logFile } : {}),
      level: conf.logLevel,
    });
    log.bind({
      cmd: env.command,
      network: conf.name,
      containerID: env.containerID,
      ifname: env.ifname,
    });
    const logger = log;
    const ctx: CommandContext = {
      env,
      conf,
      log,
      ipam: async () => (client ??= await deps.client(conf, command, logger)),
    };
    const out = await commands[command](ctx);
    log.log('info', 'done', {
      ...(client ? { path: client.path } : {}),
      ...client?.stats?.(),
      ...(deps.ownProcess
        ? {
            startMs: Math.round(startMs),
            totalMs: Math.round(performance.now()),
            cpuStartMs: cpuMs(startCpu),
            cpuMs: cpuMs(process.cpuUsage()),
          }
        : { durationMs: Math.round(performance.now() - startMs) }),
    });
    return out === undefined ? 0 : emit(io, out);
  } catch (e) {
    const err = asCniError(e);
    // The backend's counters too: e.g. `rollbackFailed`, what a failed dual-stack rollback left.
    log?.log('error', err.message, {
      code: err.code,
      details: err.details,
      ...(client ? { path: client.path } : {}),
      ...client?.stats?.(),
    });
    io.stdout.write(`${JSON.stringify(toErrorDocument(err, errorVersion(stdin)))}\n`);
    return 1;
  } finally {
    await client?.close().catch(() => undefined);
    log?.close();
  }
}

/** User + system CPU time of a {@link process.cpuUsage} reading, ms with one decimal. */
const cpuMs = (u: NodeJS.CpuUsage): number => Math.round((u.user + u.system) / 100) / 10;

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

/**
 * The error document's cniVersion for a call whose stdin is `stdin`: its top-level `cniVersion`
 * when it names a supported one, else the current version ("1.1.0").
 */
function errorVersion(stdin: string | undefined): string {
  try {
    const v = (JSON.parse(stdin ?? '') as { cniVersion?: unknown } | null)?.cniVersion;
    return isSupportedVersion(v) ? v : currentVersion;
  } catch {
    return currentVersion;
  }
}

/**
 * A CniError keeps its code (the clients map their own failures: the agent's cni-call.ts, and
 * direct-client.ts's directFailure); the time budget is 11, an I/O error 5, anything else 999.
 */
function asCniError(e: unknown): CniError {
  if (e instanceof CniError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  if (e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError')) {
    return new CniError(CniCode.tryAgainLater, 'time budget exceeded', msg);
  }
  if (e instanceof Error && (e as NodeJS.ErrnoException).code === 'EIO')
    return new CniError(CniCode.ioFailure, 'I/O failure', msg);
  return new CniError(CniCode.internal, 'internal error', msg);
}
