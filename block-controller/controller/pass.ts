/**
 * What every reconcile pass runs with: the datastore (every write goes through core), the
 * watched view, an injected clock, logs, metrics, a bounded Event budget, and the leadership
 * check made right before each write step.
 */
import type { AllocatorOptions, Datastore, IPAMBlock, IPAMNode, ResourceStore } from 'blockipam/core';
import type { ControllerEvent, EventSink } from './events.ts';
import type { ControllerMetrics } from './metrics.ts';
import type { ClusterView } from './view.ts';

/** The logger surface the passes use (winston's Logger fits). */
export interface PassLog {
  info(message: string, fields?: Record<string, unknown>): unknown;
  warn(message: string, fields?: Record<string, unknown>): unknown;
  debug(message: string, fields?: Record<string, unknown>): unknown;
}

export interface PassContext {
  /** Bound to the pass's signal (core's withSignal): no request once leadership is lost. */
  ds: Datastore;
  /** Writes an IPAMBlock's status subresource (compare-and-swap), bound to the pass's signal; absent: no write. */
  blockStatus?: (block: IPAMBlock) => Promise<IPAMBlock>;
  /** IPAMNodes (KubeDatastore's / MemoryDatastore's `ipamNodes`), bound to the pass's signal; absent: not written. */
  ipamNodes?: ResourceStore<IPAMNode>;
  view: ClusterView;
  /** ms since epoch. */
  clock: () => number;
  log: PassLog;
  metrics?: ControllerMetrics;
  events: EventBudget;
  /** Passed to every core call (clock, stats for conflicts, the pass's signal). */
  allocator: AllocatorOptions;
  /** False once leadership is lost or shutdown began: no further write step starts. */
  mayWrite: () => boolean;
  /** Counts a failed API call of a step (shared metrics' api_errors_total). */
  onApiError?: (operation: string, error: unknown) => void;
}

/**
 * At most `max` Events per pass; failures reported to `onError`, never thrown. None is sent
 * once `signal` (the pass's: leadership lost) has fired.
 */
export class EventBudget {
  readonly #sink: EventSink | undefined;
  readonly #pending: Promise<void>[] = [];
  #left: number;
  readonly #onError: (error: unknown) => void;
  readonly #signal: AbortSignal | undefined;

  constructor(
    sink: EventSink | undefined,
    max: number,
    onError: (error: unknown) => void = () => undefined,
    signal?: AbortSignal,
  ) {
    this.#sink = sink;
    this.#left = max;
    this.#onError = onError;
    this.#signal = signal;
  }

  emit(event: ControllerEvent): void {
    if (!this.#sink || this.#left <= 0 || this.#signal?.aborted) return;
    this.#left -= 1;
    this.#pending.push(this.#sink.emit(event).catch(this.#onError));
  }

  /** Waits for the Events sent so far. */
  async flush(): Promise<void> {
    await Promise.all(this.#pending);
  }
}
