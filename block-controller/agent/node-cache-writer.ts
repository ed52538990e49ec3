/**
 * Writes the node cache (docs/design-node-cache.md; format: core/node-cache/) from the watched
 * state: once every watch has synced, then after every change (debounced) and at least every
 * heartbeat (5 s), always atomically and root-only (files.ts: mode 0600, in a directory only
 * its owner may write; the plugin runs as root). `heartbeatAtMs` advances only while every watch
 * is connected: with a broken watch the document ages out and the plugin falls back to the API
 * server.
 */
import { dirname } from 'node:path';
import { buildNodeCache, encodeNodeCache, NODE_CACHE_HEARTBEAT_MS } from 'blockipam/core';
import { errorFields, F } from '../shared/index.ts';
import type { Logger } from '../shared/index.ts';
import { ensurePrivateDir, MODE_SECRET, writeFileAtomic } from './files.ts';
import type { AgentMetrics } from './metrics.ts';
import type { AgentState } from './state.ts';

export interface NodeCacheWriterOptions {
  readonly path: string;
  readonly state: AgentState;
  readonly log: Logger;
  readonly metrics: AgentMetrics;
  /** ms since epoch; default Date.now. */
  readonly clock?: () => number;
  /** Default NODE_CACHE_HEARTBEAT_MS (5 s). */
  readonly heartbeatMs?: number;
}

// 20 ms: a pod's ADD changes one block, then the pod's status; one write covers both.
const DEBOUNCE_MS = 20;
export const WRITER_NAME = 'blockipam-agent';

export class NodeCacheWriter {
  readonly #o: NodeCacheWriterOptions;
  readonly #clock: () => number;
  #generation = 0;
  #heartbeatAtMs: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #interval: NodeJS.Timeout;
  #writing: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(options: NodeCacheWriterOptions) {
    this.#o = options;
    this.#clock = options.clock ?? Date.now;
    options.state.onChange(() => this.kick());
    this.#interval = setInterval(() => void this.write(), options.heartbeatMs ?? NODE_CACHE_HEARTBEAT_MS);
  }

  /** Writes done since start. */
  get generation(): number {
    return this.#generation;
  }

  /** Schedules a write. */
  kick(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.write(), DEBOUNCE_MS);
  }

  /** Writes now (after a running write); skipped before every watch has synced. */
  async write(): Promise<void> {
    if (this.#writing) {
      this.#again = true;
      return this.#writing;
    }
    this.#writing = this.#write().finally(() => (this.#writing = undefined));
    await this.#writing;
    if (this.#again && !this.#stopped) {
      this.#again = false;
      await this.write();
    }
  }

  /** Stops the timers and waits for a running write. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#interval);
    await this.#writing;
  }

  async #write(): Promise<void> {
    const { state, log, metrics, path } = this.#o;
    const node = state.nodeObject();
    const clusterUID = state.clusterUID();
    if (this.#stopped || !state.synced || !node || !clusterUID) return;
    if (state.connected) this.#heartbeatAtMs = this.#clock();
    // Never vouched for (a watch broke before the first write): nothing to offer.
    if (this.#heartbeatAtMs === undefined) return;
    const document = buildNodeCache({
      clusterUID,
      node,
      heartbeatAtMs: this.#heartbeatAtMs,
      generation: this.#generation + 1,
      writer: { name: WRITER_NAME, pid: process.pid },
      blocks: state.nodeBlocks(),
      config: state.config(),
      pools: state.pools(),
      reservations: state.reservations(),
      pods: state.pods(),
      namespaces: state.namespaces(),
    });
    try {
      await ensurePrivateDir(dirname(path));
      await writeFileAtomic(path, encodeNodeCache(document), MODE_SECRET);
      this.#generation += 1;
      metrics.cacheWrites.inc({ node: state.node, result: 'ok' });
    } catch (error) {
      metrics.cacheWrites.inc({ node: state.node, result: 'error' });
      log.error('node cache write failed', { [F.path]: path, ...errorFields(error) });
    }
  }
}
