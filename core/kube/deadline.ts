/**
 * A request deadline that counts the time this process could run. `AbortSignal.timeout`
 * fires `timeoutMs` after the request was sent by the wall clock, even when the process itself
 * did not run for most of that time — its thread blocked in the host lock's flock(2)
 * (ipam-plugin/host/lock.ts), or the process starved of CPU among a burst of others on the
 * node — and an answer already in the socket buffer is then reported as "no answer". So when
 * the timer fires late (its callback ran more than {@link LATE_MS} after it was due: the
 * process did not run meanwhile), it is re-armed once for the time it was late (at most
 * `timeoutMs` more), and only then aborts. A hung API server therefore still fails within
 * `timeoutMs` when the process runs normally, and within 2 × `timeoutMs` at the worst.
 */

/** Lateness (ms) past which a timer's delay is taken for time the process did not run. */
export const LATE_MS = 100;

/** The longest delay setTimeout takes (a 32-bit signed ms count; longer fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface Deadline {
  /** Aborted with a DOMException named TimeoutError, like AbortSignal.timeout's. */
  readonly signal: AbortSignal;
  /** Stops the timer (the request ended); idempotent. */
  clear(): void;
}

/**
 * @param timeoutMs the deadline, ms (> 0; at most 2^31 − 1, longer is cut to that)
 * @returns the deadline; its timer never keeps the process alive
 */
export function runnableDeadline(timeoutMs: number): Deadline {
  const controller = new AbortController();
  const limitMs = Math.min(timeoutMs, MAX_TIMER_MS);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = (ms: number, graceLeft: boolean): void => {
    const due = performance.now() + ms;
    timer = setTimeout(() => {
      const late = performance.now() - due;
      if (graceLeft && late > LATE_MS) arm(Math.min(late, limitMs), false);
      else controller.abort(new DOMException(`signal timed out after ${timeoutMs} ms`, 'TimeoutError'));
    }, ms);
    (timer as { unref?: () => void }).unref?.();
  };
  arm(limitMs, true);
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
    },
  };
}
