/**
 * The plugin's entry point as a function: takes `{env, readStdin, stdout,
 * stderr}` and returns the exit code, so the whole protocol is testable without spawning.
 * Order of checks as in the Go skel: CNI_COMMAND → CNI_* variables (4) → stdin JSON (6) →
 * cniVersion (1) → command gate (1) → schema (7). Exactly one JSON document is written to stdout:
 * the ADD result, the VERSION answer, or the error object; nothing else ever is.
 */
import type { BackendFactory } from './backend/port.ts';
import type { IpamClient } from './backend/client.ts';
import { add } from './commands/add.ts';
import { check } from './commands/check.ts';
import { del } from './commands/del.ts';
import { gc } from './commands/gc.ts';
import { status } from './commands/status.ts';
import { version } from './commands/version.ts';
import type { Command, CommandContext } from './commands/context.ts';
import { parseEnv, type CniCommand, type Env } from './cni/env.ts';
import { CniCode, CniError, isCniError, toErrorDocument } from './cni/errors.ts';
import type { HostLock } from './host/lock.ts';
import { createLogger, type Logger, type Sink } from './host/log.ts';
import { parseNetConf, type NetConf } from './cni/netconf.ts';
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
  /** The direct path's backend (core's node IPAM service over the API server: kube-backend.ts). */
  readonly backend: BackendFactory;
  /**
   * Takes the host lock on netconf's `ipam.lockFile` (the direct path only), trying for at most
   * `timeoutMs`; `onWait` runs once when another process holds it. Default: the flock(2) lock
   * acquireHostLock (host/lock.ts; Bun only; in-process tests under Node inject one).
   */
  readonly lock?: (path: string, timeoutMs: number, onWait: () => void) => Promise<HostLock>;
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
    log = createLogger({
      stderr: io.stderr,
      ...(conf.logFile ? { file: conf.logFile } : {}),
      level: conf.logLevel,
    });
    log.bind({ cmd: env.command, network: conf.name, containerID: env.containerID, ifname: env.ifname });
    if (conf.deprecated)
      log.log('info', 'netconf fields ignored (deprecated, no longer used)', { fields: conf.deprecated });
    const logger = log;
    const ctx: CommandContext = {
      env,
      conf,
      log,
      ipam: async () => (client ??= await openClient(conf, env.command, logger, deps)),
    };
    const out = await commands[env.command](ctx);
    log.log('info', 'done', {
      ...(client ? { path: client.path } : {}),
      ...client?.stats?.(),
      startMs: Math.round(startMs),
      totalMs: Math.round(performance.now()),
      cpuStartMs: cpuMs(startCpu),
      cpuMs: cpuMs(process.cpuUsage()),
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

/**
 * The client for this call (docs/design-plugin.md §Thin client): with `ipam.mode: agent`, a
 * connection to the agent's socket, or the direct path when connect() fails so that the agent
 * never saw the call (agent-client.ts FALLBACK_ERRNOS); with `standalone`, the direct path and
 * no connect(). A STATUS that goes direct after trying the agent gets what is left of the one
 * `ipam.timeoutMs` (§STATUS fallback). The direct path's modules (core, the Kubernetes
 * transport, the host lock) are imported here, only when it is taken.
 */
async function openClient(conf: NetConf, command: CniCommand, log: Logger, deps: Deps): Promise<IpamClient> {
  if (conf.mode === 'agent' && conf.agentSocket !== undefined) {
    const started = performance.now();
    /** What is left of the call's budget, ms (whole ms; ≤ 0 when spent). */
    const leftMs = (): number => Math.floor(conf.timeoutMs - (performance.now() - started));
    const agent = await import('./backend/agent-client.ts');
    let c: Awaited<ReturnType<typeof agent.connectAgent>>;
    try {
      c = await agent.connectAgent({ socket: conf.agentSocket, timeoutMs: conf.timeoutMs });
    } catch (e) {
      // STATUS only reads: any connect() failure may take the direct path
      if (command !== 'STATUS' || !isCniError(e) || e.code !== CniCode.tryAgainLater) throw e;
      c = { ok: false, errno: 'EAGAIN', message: e.details };
    }
    if (c.ok)
      return command === 'STATUS'
        ? statusWithFallback({
            agent: c.client,
            direct: (timeoutMs) => openDirect({ ...conf, timeoutMs }, log, deps),
            leftMs,
            log,
            undecided: agent.agentStatusUndecided,
          })
        : c.client;
    log.log('warn', 'node agent unreachable: taking the direct path', {
      agentSocket: conf.agentSocket,
      errno: c.errno,
      error: c.message,
    });
    if (command === 'STATUS') {
      const left = leftMs();
      if (left < 1)
        throw new CniError(
          CniCode.tryAgainLater,
          'time budget exceeded',
          `${conf.agentSocket}: ${c.errno}: ${c.message}; no time left of ipam.timeoutMs (${conf.timeoutMs} ms) for the direct path`,
        );
      return openDirect({ ...conf, timeoutMs: left }, log, deps);
    }
  }
  return openDirect(conf, log, deps);
}

/** The direct path's client (core's node IPAM service over the API server, the host lock). */
async function openDirect(conf: NetConf, log: Logger, deps: Deps): Promise<IpamClient> {
  const { createDirectClient } = await import('./backend/direct-client.ts');
  const { lock } = deps;
  return createDirectClient({
    conf,
    log,
    backend: deps.backend,
    ...(lock ? { lock: (onWait: () => void) => lock(conf.lockFile, conf.lockTimeoutMs, onWait) } : {}),
  });
}

interface StatusFallback {
  /** The agent's client (connected). */
  readonly agent: IpamClient;
  /** The direct path's client with a budget of `timeoutMs` (ms). */
  readonly direct: (timeoutMs: number) => Promise<IpamClient>;
  /** What is left of the call's `ipam.timeoutMs`, ms. */
  readonly leftMs: () => number;
  readonly log: Logger;
  /** Whether the agent's failure leaves the answer undecided (agent-client.ts agentStatusUndecided). */
  readonly undecided: (e: unknown) => boolean;
}

/**
 * The agent's client for a STATUS call, asking the direct path when the agent said it has not
 * decided (`notReady`: not synced yet, stopping, busy), with what is left of the one budget —
 * never a fresh one. A STATUS reads only, so asking twice changes nothing; "not ready" from an
 * agent that never synced would otherwise make the kubelet report NetworkReady=false for the
 * whole restart. A timeout, a malformed answer or a connection closed without one are the
 * agent's answer (CNI 11 / 999), not asked again; nor is anything once the budget is spent.
 */
function statusWithFallback(o: StatusFallback): IpamClient {
  const { agent, log } = o;
  let fallback: IpamClient | undefined;
  return {
    ...agent,
    get path() {
      return fallback ? fallback.path : agent.path;
    },
    async status(call) {
      try {
        return await agent.status(call);
      } catch (e) {
        const left = o.leftMs();
        if (!o.undecided(e) || left < 1) throw e;
        log.log('warn', 'node agent gave no STATUS answer: asking the API server directly', {
          error: e instanceof CniError ? e.details : String(e),
          timeoutMs: left,
        });
        fallback = await o.direct(left);
        return fallback.status(call);
      }
    },
    async close() {
      await agent.close();
      await fallback?.close();
    },
    stats: () => ({ ...agent.stats?.(), ...fallback?.stats?.() }),
  };
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
 * A CniError keeps its code (the clients map their own failures: agent-client.ts, and
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
