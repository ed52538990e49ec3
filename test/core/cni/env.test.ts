/** The CNI_* variables: interface names as the kernel and the Go skel accept them. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ifnameProblem } from '../../../core/cni/env.ts';

void describe('env', () => {
  const names: [string, boolean][] = [
    ['eth0', true],
    ['', false],
    ['.', false],
    ['a/b', false],
    ['a b', false],
    ['a:b', false],
    ['123456789012345', true],
    ['1234567890123456', false],
  ];
  for (const [n, ok] of names)
    void it(`ifname ${JSON.stringify(n)} ${ok ? 'valid' : 'invalid'}`, () =>
      assert.equal(ifnameProblem(n) === undefined, ok));
});
