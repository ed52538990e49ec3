// Exhaustion forecasts (core/allocator/forecast.ts): the samples the controller keeps (bounded,
// one baseline before the window, none added within 30 min) and the forecast from them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FORECAST_WINDOW_MS,
  forecastExhaustion,
  forecastText,
  MAX_BASELINE_AGE_MS,
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

  test('after a day without sampling (controller down) the old samples go: no day-old baseline', () => {
    const before = [at(T0 - 30 * HOUR, 10), at(T0 - 27 * HOUR, 40), at(T0 - 24 * HOUR, 50)];
    assert.deepEqual(nextSamples(before, 90, T0), [at(T0, 90)]);
    // a gap shorter than the age bound keeps its baseline
    const recent = [at(T0 - 11 * HOUR, 10), at(T0 - 8 * HOUR, 40)];
    assert.deepEqual(nextSamples(recent, 90, T0), [at(T0 - 8 * HOUR, 40), at(T0, 90)]);
  });

  test('shuffled samples are stored sorted; hostile ones (future, negative, non-numbers) dropped', () => {
    const shuffled = [at(T0 - 2 * HOUR, 30), at(T0 - 4 * HOUR, 10), at(T0 - 3 * HOUR, 20)];
    assert.deepEqual(nextSamples(shuffled, 40, T0), [
      at(T0 - 4 * HOUR, 10),
      at(T0 - 3 * HOUR, 20),
      at(T0 - 2 * HOUR, 30),
      at(T0, 40),
    ]);
    const hostile = [
      at(T0 + 365 * 24 * HOUR, 1), // a year ahead: would block sampling for a year
      at(T0 - 5 * HOUR, -3),
      { time: rfc3339(T0 - 4 * HOUR), allocated: '7' },
      { time: rfc3339(T0 - 4 * HOUR), allocated: Number.NaN },
      { time: rfc3339(T0 - 4 * HOUR), allocated: 1.5 },
      { time: T0 - 4 * HOUR, allocated: 2 },
      { allocated: 3 },
      null,
      'sample',
      at(T0 - HOUR, 20),
    ] as unknown as AllocationSample[];
    assert.deepEqual(nextSamples(hostile, 30, T0), [at(T0 - HOUR, 20), at(T0, 30)]);
    assert.deepEqual(nextSamples({ not: 'an array' } as unknown as AllocationSample[], 30, T0), [at(T0, 30)]);
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
    // the controller has not sampled for a day: no rate from a day-old baseline
    [
      'samples only older than the age bound',
      [at(T0 - 30 * HOUR, 10), at(T0 - 26 * HOUR, 50)],
      { allocated: 100, free: 20 },
      'unknown (no sample for 26.0 hours: is the controller running?)',
    ],
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

  test('after a sampling gap the baseline is the oldest sample within the age bound', () => {
    // a day-old pair (the controller was down) and samples since it came back 2 h ago at 10/h
    const samples = [at(T0 - 26 * HOUR, 0), at(T0 - 24 * HOUR, 0), at(T0 - 2 * HOUR, 80), at(T0 - HOUR, 90)];
    const f = forecastExhaustion(samples, { allocated: 100, free: 120, nowMs: T0 });
    assert.deepEqual(f, { kind: 'exhausts', ratePerHour: 10, inMs: 12 * HOUR });
    // exactly at the bound it still counts; a millisecond older it does not
    const edge = (ms: number) => forecastExhaustion([at(T0 - ms, 0)], { allocated: 12, free: 1, nowMs: T0 });
    assert.equal(edge(MAX_BASELINE_AGE_MS).kind, 'exhausts');
    assert.equal(edge(MAX_BASELINE_AGE_MS + 1).kind, 'unknown');
  });

  // The oldest sample is the baseline: 30 addresses in 2 h, 120 free.
  test('shuffled and hostile samples: the same forecast as from the clean, sorted ones', () => {
    const clean = [at(T0 - 3 * HOUR, 10), at(T0 - HOUR, 40)];
    const now = { allocated: 70, free: 120, nowMs: T0 };
    const want = forecastExhaustion(clean, now);
    assert.deepEqual(want, { kind: 'exhausts', ratePerHour: 20, inMs: 6 * HOUR });
    const messy = [
      at(T0 - HOUR, 40),
      at(T0 + 2 * HOUR, 0), // future
      { time: rfc3339(T0 - 5 * HOUR), allocated: -50 }, // negative
      { time: rfc3339(T0 - 4 * HOUR), allocated: 'lots' }, // not a number
      { time: 'soon', allocated: 1 }, // not a time
      at(T0 - 3 * HOUR, 10),
    ] as unknown as AllocationSample[];
    assert.deepEqual(forecastExhaustion(messy, now), want);
  });
});
