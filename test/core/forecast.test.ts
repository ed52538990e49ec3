// Exhaustion forecasts (core/allocator/forecast.ts): the samples the controller keeps (bounded,
// one baseline before the window, none added within 30 min) and the forecast from them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FORECAST_WINDOW_MS,
  forecastExhaustion,
  forecastText,
  MAX_SAMPLES,
  nextSamples,
  rfc3339,
  SAMPLE_INTERVAL_MS,
} from 'blockipam/core';
import type { AllocationSample } from 'blockipam/core';

const T0 = Date.parse('2026-12-04T00:00:00Z');
const MIN = 60_000;
const HOUR = 60 * MIN;
const at = (ms: number, allocated: number): AllocationSample => ({
  time: rfc3339(ms),
  allocated,
});

describe('nextSamples', () => {
  test('the first pass samples; a pass within 30 min adds none (no status write for samples alone)', () => {
    const first = nextSamples(undefined, 5, T0);
    assert.deepEqual(first, [at(T0, 5)]);
    assert.deepEqual(nextSamples(first, 9, T0 + SAMPLE_INTERVAL_MS - 1), first);
    assert.deepEqual(nextSamples(first, 9, T0 + SAMPLE_INTERVAL_MS), [
      at(T0, 5),
      at(T0 + SAMPLE_INTERVAL_MS, 9),
    ]);
  });

  test('a day of passes every minute: bounded, the newest before the window kept as baseline', () => {
    let samples: AllocationSample[] = [];
    for (let m = 0; m <= 24 * 60; m++) samples = nextSamples(samples, m, T0 + m * MIN);
    const now = T0 + 24 * HOUR;
    assert.ok(samples.length <= MAX_SAMPLES, `${samples.length}`);
    const times = samples.map((s) => Date.parse(s.time));
    assert.equal(times.filter((t) => t <= now - FORECAST_WINDOW_MS).length, 1, 'one baseline');
    assert.ok(times.every((t, i) => i === 0 || t - (times[i - 1] ?? 0) >= SAMPLE_INTERVAL_MS));
    assert.equal(samples.at(-1)?.time, rfc3339(now));
  });

  test('samples with an unreadable time or from the future (a clock stepped back) are dropped', () => {
    const stored = [{ time: 'yesterday', allocated: 1 }, at(T0 + HOUR, 2)];
    assert.deepEqual(nextSamples(stored, 3, T0), [at(T0, 3)]);
  });
});

describe('forecastExhaustion', () => {
  const cases: [string, AllocationSample[] | undefined, { allocated: number; free: number }, string][] = [
    // 10 addresses an hour over 2 h, 240 free: 24 h
    ['a steady rise', [at(T0 - 2 * HOUR, 80)], { allocated: 100, free: 240 }, 'in 1.0 days (10.0/h)'],
    // 20 free at 10/h: 2 h
    [
      'hours when under a day',
      [at(T0 - 2 * HOUR, 80)],
      { allocated: 100, free: 20 },
      'in 2.0 hours (10.0/h)',
    ],
    ['flat', [at(T0 - 2 * HOUR, 100)], { allocated: 100, free: 20 }, 'never at the current rate'],
    ['falling', [at(T0 - 2 * HOUR, 120)], { allocated: 100, free: 20 }, 'never at the current rate'],
    ['no free address', [at(T0 - 2 * HOUR, 80)], { allocated: 100, free: 0 }, 'exhausted'],
    ['no samples', undefined, { allocated: 100, free: 20 }, 'unknown (history < 10 min)'],
    [
      'less than 10 min of history',
      [at(T0 - 9 * MIN, 10)],
      { allocated: 100, free: 20 },
      'unknown (history < 10 min)',
    ],
  ];
  for (const [name, samples, now, want] of cases)
    test(name, () => {
      assert.equal(forecastText(forecastExhaustion(samples, { ...now, nowMs: T0 })), want);
    });

  test('the oldest sample is the baseline: rate and time to exhaustion in numbers', () => {
    const f = forecastExhaustion([at(T0 - 3 * HOUR, 10), at(T0 - HOUR, 40)], {
      allocated: 70,
      free: 120,
      nowMs: T0,
    });
    assert.deepEqual(f, { kind: 'exhausts', ratePerHour: 20, inMs: 6 * HOUR });
  });
});
