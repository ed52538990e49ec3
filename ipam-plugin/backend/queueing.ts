/**
 * What the direct path does when the API server will not serve it (docs/design-plugin.md
 * §Deletion queue): a DEL is queued for the node agent (core/cni deletion-queue.ts) and answered
 * success; an ADD whose credential is refused says since when the agent, which refreshes that
 * credential, has been away, and what to do. Both only with `ipam.mode: agent`: in standalone
 * mode no agent replays a queue or refreshes a token.
 */
import { statSync } from 'node:fs';
import {
  CniCode,
  CniError,
  deletionQueueDirOf,
  enqueueDel,
  isCniError,
  isDeletionQueueFullError,
  queueableDelFailure,
} from 'blockipam/core/cni';
import type { Logger, NetConf } from 'blockipam/core/cni';
import { tokenExpiryMs } from 'blockipam/core/kube';
import type { AddCall, AddOutcome, DelCall, DelOutcome } from 'blockipam/core/node-ipam';

export interface QueueingOptions {
  /** The queue's bound (default core's MAX_QUEUED). */
  readonly max?: number;
  /** The clock (the entry's `queuedAt`). */
  readonly now?: () => Date;
}

/**
 * `del`, with a failure core's queueableDelFailure accepts (credential refused, API server
 * unreachable or out of time) recorded in the deletion queue beside the agent's socket (core/cni deletionQueueDirOf) and answered `released: 0`
 * (a `warn` line names the queue and the reason).
 * @throws the original failure when it is not queueable, or when the entry cannot be written
 *   (logged); CniError 11 "deletion queue full" naming the directory when the bound is reached
 */
export function queueing(
  conf: NetConf,
  log: Logger,
  del: (call: DelCall) => Promise<DelOutcome>,
  options: QueueingOptions = {},
): (call: DelCall) => Promise<DelOutcome> {
  return async (call) => {
    try {
      return await del(call);
    } catch (e) {
      const reason = conf.mode === 'agent' && conf.agentSocket ? queueableDelFailure(e) : undefined;
      if (reason === undefined || !conf.agentSocket) throw e;
      const dir = deletionQueueDirOf(conf.agentSocket);
      let file: string;
      try {
        file = enqueueDel(
          dir,
          {
            attachment: call.attachment,
            node: call.node,
            ...(call.podUID ? { podUID: call.podUID } : {}),
            queuedAt: (options.now?.() ?? new Date()).toISOString(),
            reason,
          },
          options.max,
        );
      } catch (qe) {
        if (isDeletionQueueFullError(qe))
          throw new CniError(
            CniCode.tryAgainLater,
            'DEL not served and the deletion queue is full',
            `${qe.message}; the DEL failed with: ${reason}`,
          );
        log.log('warn', 'DEL could not be queued for the node agent', {
          queue: dir,
          error: (qe as Error).message,
        });
        throw e;
      }
      log.log('warn', 'DEL not served: queued for the node agent', { queue: dir, file, reason });
      return { released: 0 };
    }
  };
}

/**
 * `add`, with a refused credential (CNI 105) explained in agent mode: the agent has been away
 * since about when it last wrote the plugin's kubeconfig (its mtime) and the token's expiry, and
 * what to do. Other failures pass unchanged.
 */
export function explainingRefusal(
  conf: NetConf,
  add: (call: AddCall) => Promise<AddOutcome>,
): (call: AddCall) => Promise<AddOutcome> {
  return async (call) => {
    try {
      return await add(call);
    } catch (e) {
      if (conf.mode !== 'agent' || !isCniError(e) || e.code !== CniCode.authFailed) throw e;
      throw new CniError(
        CniCode.authFailed,
        "the plugin's credential was refused and the node agent is away",
        `${e.details}; ${await awaySince(conf)}`,
        { cause: e },
      );
    }
  };
}

/** When the kubeconfig was last written and its token expires, and what to do, as one sentence. */
async function awaySince(conf: NetConf): Promise<string> {
  let written = 'an unknown time (the file cannot be read)';
  try {
    written = statSync(conf.kubeconfig).mtime.toISOString();
  } catch {
    // named as unknown
  }
  let expiry = '';
  try {
    const exp = tokenExpiryMs(
      (await (await import('./kube-backend.ts')).loadKubeconfigFile(conf.kubeconfig)).token ?? '',
    );
    if (exp !== undefined) expiry = `, its token expires at ${new Date(exp).toISOString()}`;
  } catch {
    // no expiry to name
  }
  return (
    `the node agent refreshes the plugin's kubeconfig ${conf.kubeconfig} at half its token's lifetime and last wrote it at ${written}${expiry}: ` +
    `it has not run on node ${conf.nodeName} since about then. Start it: check the blockipam agent pod on this node ` +
    `(kubectl get pods -A -o wide --field-selector spec.nodeName=${conf.nodeName}) and its logs; ` +
    'pod deletions meanwhile are queued on the node and released when it runs'
  );
}
