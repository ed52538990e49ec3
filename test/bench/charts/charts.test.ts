/**
 * The benchmark charts (test/bench/charts/): each shape renders one well-formed SVG document that
 * draws the data it was given — one point per sample, one bar per bin or (category, series), the
 * series named in the legend, the title and subtitle as text — and bad input is refused by name.
 * Not timed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { renderSvg, writeChart } from './render.ts';
import { barSpec, histogramSpec, lineSpec } from './specs.ts';

/**
 * Checks that `svg` is one well-formed XML element tree rooted at `<svg>`: every start tag is
 * closed in order, nothing follows the root. @returns the element names in document order
 */
function elements(svg: string): string[] {
  const names: string[] = [];
  const open: string[] = [];
  const tag = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/gy;
  let at = 0;
  for (;;) {
    const lt = svg.indexOf('<', at);
    if (lt < 0) break;
    assert.ok(
      open.length > 0 || lt === 0 || svg.slice(at, lt).trim() === '',
      `text outside the root at ${at}`,
    );
    tag.lastIndex = lt;
    const m = tag.exec(svg);
    assert.ok(m, `malformed tag at ${lt}: ${svg.slice(lt, lt + 60)}`);
    const [, close, name = '', , selfClose] = m;
    if (close) assert.equal(open.pop(), name, `</${name}> closes the wrong element at ${lt}`);
    else {
      assert.ok(open.length > 0 || names.length === 0, `a second root element <${name}>`);
      names.push(name);
      if (!selfClose) open.push(name);
    }
    at = tag.lastIndex;
  }
  assert.deepEqual(open, [], 'unclosed elements');
  assert.equal(svg.slice(at).trim(), '', 'text after the root');
  return names;
}

const count = (svg: string, what: string): number => svg.split(what).length - 1;
/** The text drawn: every `<text>` and `<tspan>` (a multi-line title is one `<tspan>` per line). */
const texts = (svg: string): string[] =>
  [...svg.matchAll(/<(text|tspan)\b[^>]*>([^<]*)<\/\1>/g)].map((m) => m[2] ?? '');

describe('benchmark charts', () => {
  it('a line chart draws every point of every series, with legend, title and subtitle', async () => {
    const svg = await renderSvg(
      lineSpec({
        title: 'claim search vs blocks',
        subtitle: ['2 cores · load average 1.50', 'method: memory store'],
        x: { title: 'blocks in the pool', scale: 'log' },
        y: { title: 'ms per claim' },
        series: [
          {
            name: 'blockipam',
            points: [
              [100, 2],
              [1000, 3],
              [10000, 4],
            ],
          },
          {
            name: 'other',
            points: [
              [100, 1],
              [1000, 5],
            ],
          },
        ],
      }),
    );
    const names = elements(svg);
    assert.equal(names[0], 'svg');
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]* width="\d+" height="\d+"/);
    assert.equal(count(svg, 'aria-roledescription="point"'), 5);
    assert.equal(count(svg, 'aria-roledescription="line mark"'), 2);
    for (const label of [
      'blocks in the pool: 1000; ms per claim: 3; series: blockipam',
      'blocks in the pool: 1000; ms per claim: 5; series: other',
    ])
      assert.ok(svg.includes(`aria-label="${label}`), label);
    const shown = texts(svg);
    for (const t of ['blockipam', 'other', 'claim search vs blocks', '2 cores · load average 1.50'])
      assert.ok(shown.includes(t), `"${t}" is drawn`);
  });

  it('a histogram bins the samples of each series on one axis', async () => {
    const svg = await renderSvg(
      histogramSpec({
        title: 'ADD latency',
        x: { title: 'ms' },
        maxBins: 10,
        series: [
          { name: 'a', values: [10, 11, 12, 12, 55] },
          { name: 'b', values: [30, 31] },
        ],
      }),
    );
    elements(svg);
    // bins of 5: a fills 10–15 (four samples) and 50–55, b fills 30–35 — one bar per non-empty (bin, series)
    const bars = [
      ...svg.matchAll(/aria-label="([^"]*)" role="graphics-symbol" aria-roledescription="bar"/g),
    ].map((m) => m[1]);
    assert.deepEqual(bars, [
      'ms: 10 – 15; samples: 4; series: a',
      'ms: 50 – 55; samples: 1; series: a',
      'ms: 30 – 35; samples: 2; series: b',
    ]);
  });

  it('a bar chart draws one bar per (category, series) and writes the file the doc links', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'charts-'));
    const link = await writeChart(
      'pod-churn-phases',
      barSpec({
        title: 'phases',
        categoryTitle: 'phase',
        y: { title: 'wall time (s)' },
        bars: [
          { category: 'create', series: 'blockipam', value: 40 },
          { category: 'create', series: 'host-local', value: 35 },
          { category: 'delete', series: 'blockipam', value: 12 },
        ],
      }),
      dir,
    );
    assert.equal(link, 'benchmarks/pod-churn-phases.svg');
    const svg = readFileSync(join(dir, 'pod-churn-phases.svg'), 'utf8');
    elements(svg.trim());
    assert.equal(count(svg, 'aria-roledescription="bar"'), 3);
    assert.ok(svg.includes('aria-label="phase: create; wall time (s): 35; series: host-local"'));
  });

  it('refuses input it cannot draw, naming it', async () => {
    const line = { title: 't', x: { title: 'x' }, y: { title: 'y', scale: 'log' as const } };
    assert.throws(
      () => lineSpec({ ...line, series: [{ name: 's', points: [] }] }),
      /series "s": points is empty/,
    );
    assert.throws(
      () => lineSpec({ ...line, series: [{ name: 's', points: [[1, 0]] }] }),
      /y 0 on a log axis/,
    );
    assert.throws(
      () => histogramSpec({ title: 't', x: { title: 'x' }, series: [{ name: 'h', values: [] }] }),
      /"h"/,
    );
    assert.throws(
      () => barSpec({ title: 't', categoryTitle: 'c', y: { title: 'y' }, bars: [] }),
      /bars is empty/,
    );
    await assert.rejects(
      writeChart(
        'Bad Name',
        barSpec({
          title: 't',
          categoryTitle: 'c',
          y: { title: 'y' },
          bars: [{ category: 'a', series: 'b', value: 1 }],
        }),
        tmpdir(),
      ),
      /chart name "Bad Name"/,
    );
  });
});
