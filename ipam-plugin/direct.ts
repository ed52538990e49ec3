/**
 * The plugin's direct path as a whole call (docs/design-plugin.md §Direct path): core/cni's
 * dispatcher in this process, its node IPAM client core's service over the API server under the
 * host lock (backend/direct-client.ts), its log the netconf's `logFile` and stderr
 * (host/log.ts). Serves VERSION, every call that is not forwarded (`ipam.mode: standalone`, no
 * `ipam.agentSocket`, stdin that is not a JSON object), and a call whose connect() to the agent
 * failed so that the agent never saw it (backend/agent-client.ts FALLBACK_ERRNOS). Loaded lazily
 * by call.ts: the forwarding path never evaluates it.
 */
import { dispatch, type Io, type Logger, type NetConf } from 'blockipam/core/cni';
import type { BackendFactory } from './backend/port.ts';
import type { HostLock } from './host/lock.ts';
import { createLogger } from './host/log.ts';

export interface DirectDeps {
  /** The direct path's backend (core's node IPAM service over the API server: kube-backend.ts). */
  readonly backend: BackendFactory;
  /**
   * Takes the host lock on netconf's `ipam.lockFile`, trying for at most `timeoutMs`; `onWait`
   * runs once when another process holds it. Default: the flock(2) lock acquireHostLock
   * (host/lock.ts; Bun only; in-process tests under Node inject one).
   */
  readonly lock?: (path: string, timeoutMs: number, onWait: () => void) => Promise<HostLock>;
  /** Why the agent was not asked (its socket refused the connection): logged `warn` with the call. */
  readonly agentUnreachable?: { readonly socket: string; readonly errno: string; readonly message: string };
}

/** Runs one call on the direct path. @returns the exit code (0 success, 1 failure) */
export function runDirect(io: Io, deps: DirectDeps): Promise<number> {
  return dispatch(io, {
    logger: createLogger,
    ownProcess: true,
    client: (conf, _command, log) => {
      const why = deps.agentUnreachable;
      if (why)
        log.log('warn', 'node agent unreachable: taking the direct path', {
          agentSocket: why.socket,
          errno: why.errno,
          error: why.message,
        });
      return openDirect(conf, log, deps);
    },
  });
}

/** The direct path's client (core's node IPAM service over the API server, the host lock). */
async function openDirect(conf: NetConf, log: Logger, deps: DirectDeps) {
  const { createDirectClient } = await import('./backend/direct-client.ts');
  const { lock } = deps;
  return createDirectClient({
    conf,
    log,
    backend: deps.backend,
    ...(lock ? { lock: (onWait: () => void) => lock(conf.lockFile, conf.lockTimeoutMs, onWait) } : {}),
  });
}
