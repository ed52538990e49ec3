/**
 * The plugin's direct path as a whole call (docs/design-plugin.md §Direct path): core/cni's
 * dispatcher in this process, its node IPAM client core's service over the API server under the
 * host lock (backend/direct-client.ts), its log the netconf's `logFile` and stderr
 * (host/log.ts). Serves every call the Go forwarder does not hand to the agent (`ipam.mode:
 * standalone`, no `ipam.agentSocket`, stdin that is not a JSON object), and every call the agent
 * did not start (no socket, NOT_SERVED, no READY in time).
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
  /**
   * Why the agent did not serve a call the forwarder meant for it (core/cni DIRECT_ENV's value:
   * the socket refused, NOT_SERVED's reason, no READY in time): logged `warn` with the call.
   */
  readonly agentNotAsked?: string;
}

/** Runs one call on the direct path. @returns the exit code (0 success, 1 failure) */
export function runDirect(io: Io, deps: DirectDeps): Promise<number> {
  return dispatch(io, {
    logger: createLogger,
    ownProcess: true,
    client: (conf, _command, log) => {
      if (deps.agentNotAsked !== undefined)
        log.log('warn', 'node agent did not serve the call: taking the direct path', {
          reason: deps.agentNotAsked,
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
