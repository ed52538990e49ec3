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

/**
 * @param timeoutMs the deadline, ms (> 0)
 * @returns a signal aborted with a DOMException named TimeoutError, like AbortSignal.timeout's;
 *   its timer never keeps the process alive
 */
export function runnableDeadline(timeoutMs: number): AbortSignal {
  const controller = new AbortController();
  const arm = (ms: number, graceLeft: boolean): void => {
    const due = performance.now() + ms;
    const timer = setTimeout(() => {
      const late = performance.now() - due;
      if (graceLeft && late > LATE_MS) arm(Math.min(late, timeoutMs), false);
      else controller.abort(new DOMException(`signal timed out after ${timeoutMs} ms`, 'TimeoutError'));
    }, ms);
    (timer as { unref?: () => void }).unref?.();
  };
  arm(timeoutMs, true);
  return controller.signal;
}
