/**
 * The agent's replay of the node's deletion queue (docs/design-agent.md §Deletion queue): the
 * DELs the plugin's direct path queued while neither the agent nor the API server could serve
 * them (core/cni deletion-queue.ts) are released through the agent's own service, by handle, once
 * it serves DEL (its node's blocks listed), then every `periodMs`. A released entry's file goes;
 * a failed one stays for the next pass. One log line per entry; counters and the queue's size as
 * metrics.
 */
import { replayDeletionQueue, queuedFiles } from 'blockipam/core/cni';
import type { ReplayResult } from 'blockipam/core/cni';
import type { NodeIpam } from 'blockipam/core/node-ipam';
import { F } from '../../shared/index.ts';
import type { Lifecycle, Logger } from '../../shared/index.ts';
import type { AgentMetrics } from '../metrics.ts';

/** 10 s: a queued DEL waits at most this long once the agent serves, and an idle pass is one readdir. */
const REPLAY_PERIOD_MS = 10_000;
/** 1 s: how often a pass looks again for the service before the agent serves DEL. */
const WAIT_MS = 1_000;
/** 30 s per entry: a DEL's default CNI budget. */
const ENTRY_BUDGET_MS = 30_000;

export interface DeletionReplayOptions {
  /** The queue's directory (the plugin's `<ipam.cacheDir>/del-queue`). */
  readonly dir: string;
  readonly node: string;
  /** The service, or why there is none yet (not synced, stopping): the pass then waits. */
  readonly ipam: () => NodeIpam | string;
  readonly log: Logger;
  readonly metrics: Pick<AgentMetrics, 'deletionQueueEntries' | 'deletionQueueReplays'>;
  readonly lifecycle: Lifecycle;
  /** Between passes, ms; default {@link REPLAY_PERIOD_MS}. */
  readonly periodMs?: number;
}

export interface DeletionReplay {
  /** One pass now (after the one running, if any): undefined when the service is not there yet. */
  pass(): Promise<readonly ReplayResult[] | undefined>;
}

/** Starts the periodic passes (the first at once); stopped with the lifecycle. */
export function startDeletionReplay(o: DeletionReplayOptions): DeletionReplay {
  const { node, log, metrics } = o;
  let running: Promise<readonly ReplayResult[] | undefined> = Promise.resolve(undefined);
  const once = async (): Promise<readonly ReplayResult[] | undefined> => {
    const ipam = o.ipam();
    if (typeof ipam === 'string') return undefined;
    const results = await replayDeletionQueue({
      dir: o.dir,
      node,
      del: (call) => ipam.del(call, AbortSignal.timeout(ENTRY_BUDGET_MS)),
      onResult: (r) => report(r, o),
    });
    metrics.deletionQueueEntries.set({ node }, queuedFiles(o.dir).length);
    return results;
  };
  const pass = (): Promise<readonly ReplayResult[] | undefined> =>
    (running = running.then(once).catch((error: unknown) => {
      log.warn('deletion queue pass failed', { [F.node]: node, queue: o.dir, error: String(error) });
      return []; // a pass was made: the next after the full period
    }));
  let timer: NodeJS.Timeout | undefined;
  const loop = async (): Promise<void> => {
    const served = await pass();
    if (o.lifecycle.stopping) return;
    // not served yet: look again soon, so a synced agent replays within a second
    timer = setTimeout(() => void loop(), served ? (o.periodMs ?? REPLAY_PERIOD_MS) : WAIT_MS);
    timer.unref();
  };
  o.lifecycle.onStop('deletion queue', async () => {
    clearTimeout(timer);
    await running;
  });
  void loop();
  return { pass };
}

function report(r: ReplayResult, o: DeletionReplayOptions): void {
  const e = r.entry;
  const fields = {
    [F.node]: o.node,
    queue: o.dir,
    file: r.file,
    ...(e
      ? {
          [F.handle]: `${e.attachment.network}.${e.attachment.containerID}.${e.attachment.ifname}`,
          queuedAt: e.queuedAt,
          reason: e.reason,
        }
      : {}),
  };
  if ('error' in r) {
    o.metrics.deletionQueueReplays.inc({ node: o.node, result: 'failed' });
    o.log.warn('queued DEL not replayed: kept for the next pass', { ...fields, error: r.error });
  } else {
    o.metrics.deletionQueueReplays.inc({ node: o.node, result: 'released' });
    o.log.info('queued DEL replayed', { ...fields, released: r.released });
  }
}
