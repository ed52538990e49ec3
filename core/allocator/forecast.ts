/**
 * Exhaustion forecasts (pure; docs/design-controller.md §Forecasts): the controller keeps a few
 * samples of a pool's allocated count in `IPPool.status.allocationSamples` ({@link nextSamples});
 * anyone reading the status forecasts from them and the pool's current figures
 * ({@link forecastExhaustion}): the allocation rate over the samples' window, and when the free
 * addresses run out at that rate. One rule for the controller and ipamctl.
 */
import { rfc3339 } from '../time.ts';

/** One sample: the pool's allocated count at a time. */
export interface AllocationSample {
  /** RFC 3339, e.g. "2026-12-04T02:30:00Z". */
  readonly time: string;
  /** Allocated addresses then. */
  readonly allocated: number;
}

// 6 h: "recent" — long enough that a pod restart wave does not read as a trend, short enough that
// a rollout filling a pool shows within hours.
export const FORECAST_WINDOW_MS = 6 * 3_600_000;
// 30 min: at most 2 status writes per pool and hour for the samples (every agent watches IPPools).
export const SAMPLE_INTERVAL_MS = 30 * 60_000;
// 10 min: a rate over less history (a pool just made, a controller just started) is noise.
export const MIN_FORECAST_SPAN_MS = 10 * 60_000;
// 16: the window holds 13 samples 30 min apart; a bound whatever a stored status holds.
export const MAX_SAMPLES = 16;

/**
 * The samples to store after a pass at `nowMs`: `allocated` appended when there is none or the
 * newest is at least {@link SAMPLE_INTERVAL_MS} old (else unchanged: no status write for the
 * samples alone); then those older than {@link FORECAST_WINDOW_MS} dropped but the newest of them
 * (the baseline at the window's start), at most {@link MAX_SAMPLES}. A sample with an unreadable
 * time or from the future (a clock step back) is dropped.
 * @param allocated saturating count (pool-status.ts count)
 */
export function nextSamples(
  stored: readonly AllocationSample[] | undefined,
  allocated: number,
  nowMs: number,
): AllocationSample[] {
  const valid = (stored ?? []).filter((s) => {
    const t = Date.parse(s.time);
    return Number.isFinite(t) && t <= nowMs;
  });
  const newest = valid.at(-1);
  const due = newest === undefined || nowMs - Date.parse(newest.time) >= SAMPLE_INTERVAL_MS;
  const all = due ? [...valid, { time: rfc3339(nowMs), allocated }] : valid;
  const start = nowMs - FORECAST_WINDOW_MS;
  const before = all.filter((s) => Date.parse(s.time) <= start);
  const inside = all.filter((s) => Date.parse(s.time) > start);
  const baseline = before.at(-1);
  return [...(baseline ? [baseline] : []), ...inside].slice(-MAX_SAMPLES);
}

/** A pool's forecast. */
export type Forecast =
  /** No free address now. */
  | { readonly kind: 'exhausted' }
  /** Less than {@link MIN_FORECAST_SPAN_MS} of samples. */
  | { readonly kind: 'unknown'; readonly spanMs: number }
  /** Allocation flat or falling over the window. */
  | { readonly kind: 'never'; readonly ratePerHour: number }
  /** At `ratePerHour` (> 0), the free addresses run out in `inMs`. */
  | { readonly kind: 'exhausts'; readonly ratePerHour: number; readonly inMs: number };

/**
 * Forecast from the samples (oldest = baseline) and the pool's figures now: rate = (allocated now
 * − baseline's) / time since the baseline, per hour; free / rate until exhaustion.
 * @param now.allocated and now.free from the pool's status (or poolUtilization)
 */
export function forecastExhaustion(
  samples: readonly AllocationSample[] | undefined,
  now: { allocated: number; free: number; nowMs: number },
): Forecast {
  if (now.free <= 0) return { kind: 'exhausted' };
  const baseline = (samples ?? []).find((s) => Number.isFinite(Date.parse(s.time)));
  const spanMs = baseline ? now.nowMs - Date.parse(baseline.time) : 0;
  if (!baseline || spanMs < MIN_FORECAST_SPAN_MS) return { kind: 'unknown', spanMs: Math.max(0, spanMs) };
  const ratePerHour = ((now.allocated - baseline.allocated) * 3_600_000) / spanMs;
  if (ratePerHour <= 0) return { kind: 'never', ratePerHour };
  return { kind: 'exhausts', ratePerHour, inMs: (now.free / ratePerHour) * 3_600_000 };
}

/**
 * A forecast as a person reads it: "in 3.2 days (12.5/h)", "never at the current rate",
 * "exhausted", "unknown (history < 10 min)".
 */
export function forecastText(f: Forecast): string {
  switch (f.kind) {
    case 'exhausted':
      return 'exhausted';
    case 'unknown':
      return `unknown (history < ${MIN_FORECAST_SPAN_MS / 60_000} min)`;
    case 'never':
      return 'never at the current rate';
    case 'exhausts': {
      const days = f.inMs / 86_400_000;
      const when = days >= 1 ? `${days.toFixed(1)} days` : `${(f.inMs / 3_600_000).toFixed(1)} hours`;
      return `in ${when} (${f.ratePerHour.toFixed(1)}/h)`;
    }
  }
}
