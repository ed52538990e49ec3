// The agent's report of ignored blocks: one log line per change of (block, reason), never one
// per pass, and a gauge by reason with every reason present (bounded series).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BLOCK_REFUSALS, IgnoredBlocks } from '../../../block-controller/agent/routes/index.ts';
import type { SkippedRoute } from '../../../block-controller/agent/routes/index.ts';

function recorder(): {
  lines: string[];
  gauge: Map<string, number>;
  report: IgnoredBlocks;
} {
  const lines: string[] = [];
  const gauge = new Map<string, number>();
  const log = {
    info: (m: string, f?: Record<string, unknown>) => lines.push(`info ${m} ${String(f?.['block'])}`),
    warn: (m: string, f?: Record<string, unknown>) =>
      lines.push(`warn ${m} ${String(f?.['block'])} ${String(f?.['reason'])}`),
  };
  const report = new IgnoredBlocks({
    node: 'a',
    log,
    gauge: { set: (labels, value) => gauge.set(`${labels.node}/${labels.reason}`, value) },
  });
  return { lines, gauge, report };
}

const skip = (block: string, why: SkippedRoute['why']): SkippedRoute => ({
  block,
  dst: block,
  node: 'x',
  why,
});

void describe('IgnoredBlocks', () => {
  void it('logs once per (block, reason) change, not every pass', () => {
    const r = recorder();
    const pass = [skip('b1', 'overlap'), skip('b2', 'size-mismatch'), skip('b3', 'node-unknown')];
    r.report.report(pass);
    r.report.report(pass);
    r.report.report(pass);
    // two warnings; node-unknown is a route's next hop, not a refused block
    assert.equal(r.lines.length, 2, r.lines.join('\n'));
    // reason changes: one more line; b2 goes: one info line
    r.report.report([skip('b1', 'labels-mismatch')]);
    r.report.report([skip('b1', 'labels-mismatch')]);
    assert.deepEqual(r.lines.slice(2), [
      'warn block ignored: no route for it or its borrowed addresses b1 labels-mismatch',
      'info block no longer ignored (trusted again, or gone) b2',
    ]);
  });

  void it('sets the gauge for every reason, zeros included', () => {
    const r = recorder();
    r.report.report([skip('b1', 'overlap'), skip('b2', 'overlap'), skip('b3', 'outside-pools')]);
    assert.equal(r.gauge.size, BLOCK_REFUSALS.length);
    assert.equal(r.gauge.get('a/overlap'), 2);
    assert.equal(r.gauge.get('a/outside-pools'), 1);
    assert.equal(r.gauge.get('a/size-mismatch'), 0);
    r.report.report([]);
    assert.equal(r.gauge.get('a/overlap'), 0);
  });
});
