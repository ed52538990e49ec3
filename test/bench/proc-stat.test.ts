/**
 * /proc/<pid>/stat read field by field (test/bench/proc-stat.ts), whatever the process's name
 * holds: spaces and parentheses included.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cpuSeconds, parseStat } from './proc-stat.ts';

/** A stat line with the given name; utime 11, stime 22, cutime 33, cstime 44, starttime 5555. */
const stat = (comm: string): string =>
  `4242 (${comm}) S 17 4242 4242 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 9 0 5555 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0`;

describe('parseStat', () => {
  for (const [why, comm] of [
    ['a plain name', 'kubelet'],
    ['a name with spaces', 'runc init x'],
    ['a name with parentheses and a space', 'a) (b'],
    ['the 15-character truncation of the shim', 'containerd-shim'],
  ] as const)
    test(why, () => {
      assert.deepEqual(parseStat(stat(comm)), {
        pid: 4242,
        comm,
        ppid: 17,
        start: 5555,
        ticks: 33,
        childTicks: 77,
      });
    });
  test('text that is no stat line is undefined', () => {
    for (const text of ['', 'gone', '12 (x) S']) assert.equal(parseStat(text), undefined, text);
  });
});

test('cpuSeconds: this process’s, and NaN for a PID that is no process', () => {
  assert.ok(cpuSeconds(process.pid) >= 0);
  assert.ok(Number.isNaN(cpuSeconds(2 ** 22 + 1))); // above pid_max's ceiling
});
