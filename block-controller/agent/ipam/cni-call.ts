/**
 * One forwarded CNI call, served in the agent (docs/design-agent.md §IPAM server): core/cni's
 * dispatcher runs it in-process — it validates the CNI_* variables and the netconf, and formats
 * the result or the CNI error exactly as the plugin's executable would — with a node IPAM client
 * that calls the agent's service directly ({@link agentClient}). What it writes is captured and
 * answered as the exit code, stdout and stderr (core/node-ipam wire.ts RESULT).
 */
import { dispatch, errorOfKind, isCniError, agentMarginMs, CniCode } from 'blockipam/core/cni';
import type {
  IpamClient,
  IpamCommand,
  Level,
  Logger as CallLogger,
  LoggerOptions,
  NetConf,
} from 'blockipam/core/cni';
import { nodeIpamErrorOf, servedNodeProblem } from 'blockipam/core/node-ipam';
import type {
  AddAnswer,
  AddOutcome,
  CallRequest,
  NodeIpam,
  NodeIpamOp,
  NodeIpamOps,
} from 'blockipam/core/node-ipam';
import { F } from '../../shared/index.ts';
import type { Logger } from '../../shared/index.ts';
import { msUntil } from './deadline.ts';

export interface CallServiceOptions {
  readonly node: string;
  /** The service, or why there is none yet (the `notReady` message: not synced, stopping). */
  readonly ipam: () => NodeIpam | string;
  readonly log: Logger;
}

/** What a call did, for the metrics: the operation and its outcome's kind, or error_<kind>. */
export interface CallRecord {
  /** The CNI command in lower case, `unknown` when CNI_COMMAND names none. */
  op: string;
  /** The node IPAM outcome's kind (`allocated`, `ready` …; `ok` when it has none) or `error_<kind>`. */
  outcome?: string;
  /** How the call's node IPAM ADD ended (its outcome or error kind), for the failed-ADD counter. */
  add?: AddAnswer;
}

/** What the plugin process would have written and returned. */
export interface CallResponse {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Serves `request` until `clientGone` fires or its budget ends: the client's deadline less
 * core/cni's agentMarginMs of the netconf's `ipam.timeoutMs`. What it did goes to `record`.
 * @returns the answer; never rejects
 */
export async function serveCall(
  request: CallRequest,
  clientGone: AbortSignal,
  record: CallRecord,
  options: CallServiceOptions,
): Promise<{ response: CallResponse }> {
  let stdout = '';
  let stderr = '';
  const code = await dispatch(
    {
      env: request.env,
      readStdin: () => request.stdin,
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
    },
    {
      logger: (o) => callLogger(o, options.log),
      client: (conf, cmd, log) =>
        Promise.resolve(agentClient({ conf, command: cmd, log, request, clientGone, record, options })),
    },
  );
  // refused by the CNI layer before any node IPAM operation (CNI_* variables, netconf, version)
  record.outcome ??= code === 0 ? 'ok' : 'error_badRequest';
  return { response: { code, stdout, stderr } };
}

const rank: Readonly<Record<Level, number>> = { error: 0, warn: 1, info: 2, debug: 3 };

/**
 * The call's logger: each line to the agent's logger (at the netconf's `logLevel`, with the
 * call's bound fields), and at `warn` and above also to the call's stderr as the executable
 * writes it (one JSON object per line). The netconf's `logFile` is the executable's: the agent
 * logs to its own output.
 */
function callLogger(o: LoggerOptions, log: Logger): CallLogger {
  const context: Record<string, unknown> = {};
  const now = o.now ?? (() => new Date());
  return {
    log(level, msg, fields) {
      if (rank[level] <= rank[o.stderrLevel ?? 'warn'])
        o.stderr.write(
          `${JSON.stringify({ time: now().toISOString(), level, msg, ...context, ...fields })}\n`,
        );
      if (rank[level] <= rank[o.level ?? 'info']) log.log(level, msg, { ...context, ...fields });
    },
    bind(fields) {
      Object.assign(context, fields);
    },
    close() {},
  };
}

interface ClientContext {
  readonly conf: NetConf;
  readonly command: IpamCommand;
  readonly log: CallLogger;
  readonly request: CallRequest;
  readonly clientGone: AbortSignal;
  readonly record: CallRecord;
  readonly options: CallServiceOptions;
}

/**
 * The node IPAM client of one call: the agent's service, in-process. Same rules as the socket
 * server of protocol v1 had: a call naming another node is refused (CNI 7, core's
 * servedNodeProblem) but for DEL, served for this node; no service → `notReady` (CNI 11); the
 * operation's signal fires when the client goes or at its deadline less core/cni's
 * agentMarginMs, so the answer reaches the plugin before it gives up, and every block write
 * re-checks it (core's batching datastore drops a change whose signal fired before it was sent);
 * failures mapped by core's nodeIpamErrorOf
 * and core/cni's errorOfKind (STATUS: `unavailable` and `notReady` are 50, an ADD cannot be
 * served), the details prefixed `node agent: `.
 */
function agentClient(c: ClientContext): IpamClient {
  const { options, record } = c;
  const budgetMs = (): number => msUntil(c.request.deadlineNs) - agentMarginMs(c.conf.timeoutMs);
  const call =
    <K extends NodeIpamOp>(op: K) =>
    async (given: NodeIpamOps[K]['call']): Promise<NodeIpamOps[K]['outcome']> => {
      let request = given;
      const wrongNode = servedNodeProblem(request.node, options.node);
      if (wrongNode !== undefined) {
        if (op !== 'del') {
          record.outcome = 'error_misconfigured';
          if (op === 'add') record.add = { errorKind: 'misconfigured' };
          throw errorOfKind('misconfigured', `node agent: ${wrongNode}`);
        }
        c.log.log('warn', 'DEL naming another node served for this node', {
          [F.node]: options.node,
          callNode: request.node,
        });
        request = { ...request, node: options.node };
      }
      try {
        const budget = AbortSignal.timeout(Math.max(1, Math.ceil(budgetMs())));
        const signal = AbortSignal.any([c.clientGone, budget]);
        const outcome = await serviceOp(op, options)(request, signal);
        record.outcome = outcomeKind(outcome);
        if (op === 'add') record.add = { outcome: outcome as AddOutcome };
        return outcome;
      } catch (error) {
        if (isCniError(error)) throw error;
        const { kind, message } =
          error instanceof NotReadyError
            ? { kind: 'notReady' as const, message: error.message }
            : nodeIpamErrorOf(error);
        record.outcome = `error_${kind}`;
        if (op === 'add') record.add = { errorKind: kind };
        const statusDown = op === 'status' && (kind === 'unavailable' || kind === 'notReady');
        throw errorOfKind(kind, `node agent: ${message}`, statusDown ? CniCode.notAvailable : undefined);
      }
    };
  return {
    path: 'agent',
    add: call('add'),
    del: call('del'),
    check: call('check'),
    gc: call('gc'),
    status: call('status'),
    close: () => Promise.resolve(),
  };
}

/** Not ready to serve: the service's message (not synced, stopping) as core's kind `notReady`. */
class NotReadyError extends Error {
  override readonly name = 'NotReadyError';
}

/** The service's operation `op`, or what stands in for it while there is no service. */
function serviceOp<K extends NodeIpamOp>(
  op: K,
  options: CallServiceOptions,
): (call: NodeIpamOps[K]['call'], signal: AbortSignal) => Promise<NodeIpamOps[K]['outcome']> {
  const ipam = options.ipam();
  if (typeof ipam !== 'string') return ipam[op];
  return () => Promise.reject(new NotReadyError(ipam));
}

function outcomeKind(outcome: unknown): string {
  const kind = (outcome as { kind?: unknown }).kind;
  return typeof kind === 'string' ? kind : 'ok';
}
