/**
 * The agent-memory bench's tables (test/bench/agent-memory-report.ts): one summary row per size
 * and allocations per block, one detail row per process, and the growth sentences compare the
 * fewest with the most allocations at each size, whatever order the rows came in.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { renderMemory } from './agent-memory-report.ts';
import type { Figures, MemoryRow } from './agent-memory-report.ts';

const at = (rssMiB: number): Figures => ({ rssMiB, peakMiB: rssMiB + 1, heapMiB: rssMiB / 4, readyS: 2 });
const row = (nodes: number, allocations: number, agent: number, old: number): MemoryRow => ({
  nodes,
  allocations,
  blockMiB: (nodes * (1 + allocations)) / 1000,
  figures: { agent: at(agent), old: at(old) },
  load: 1,
});

describe('renderMemory', () => {
  test('summary, detail and one growth line per size, fewest → most allocations', () => {
    // the 50-allocation row of 1000 nodes comes first: the sentence still reads 0 → 50
    const rows = [
      row(1000, 50, 175, 289),
      row(1000, 0, 180, 172),
      row(5000, 0, 190, 218),
      row(5000, 50, 191, 571),
    ];
    const [summary, detail, growth] = renderMemory(rows, ['agent', 'old']).split('\n\n');
    assert.equal(summary?.split('\n').length, 2 + rows.length);
    assert.match(summary ?? '', /^\| 5000 \| 50 \| 255\.0 \| 191 \| 571 \| 1\.00 \|$/m);
    assert.equal(detail?.split('\n').length, 2 + rows.length * 2);
    assert.match(detail ?? '', /^\| 5000 \| 50 \| old watches only \| 571 \| 572 \| 143 \| 2\.0 \|$/m);
    const lines = growth?.split('\n') ?? [];
    assert.match(
      lines[0] ?? '',
      /^- At 1000 nodes, 0 → 50 allocations .*agent \(source under Node\) 180 → 175; old watches only 172 → 289\.$/,
    );
    assert.match(lines[1] ?? '', /^- At 5000 nodes, 0 → 50 allocations .* 190 → 191; .* 218 → 571\.$/);
    // first row to last row, as measured (the bench runs sizes ascending)
    assert.match(lines[2] ?? '', /^- From 1000 nodes with 50 allocations per block to 5000 with 50 /);
  });

  test('a subject not measured in a row is a dash, not NaN', () => {
    const partial: MemoryRow = { ...row(100, 0, 170, 165), figures: { agent: at(170) } };
    const text = renderMemory([partial], ['agent', 'old']);
    assert.match(text, /^\| 100 \| 0 \| 0\.1 \| 170 \| — \| 1\.00 \|$/m);
    assert.doesNotMatch(text, /NaN/);
  });
});
