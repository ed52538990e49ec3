/**
 * docs/install.md's values table is the one scripts/values-table.ts generates from
 * charts/blockipam/values.schema.json and values.yaml, and the schema describes every value
 * (a value without a description would drop out of the table silently); Chart.yaml's versions
 * are the package's.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { documentedTable, INSTALL_DOC, valuesTable } from '../../scripts/values-table.ts';

const CHART = join(import.meta.dirname, '..', '..', 'charts', 'blockipam');

test('docs/install.md holds the generated values table (node scripts/values-table.ts --write)', async () => {
  assert.equal(documentedTable(readFileSync(INSTALL_DOC, 'utf8')), await valuesTable());
});

test('every key of values.yaml is in the schema, and the schema leaves no key undescribed', () => {
  interface Node {
    description?: string;
    properties?: Record<string, Node>;
    additionalProperties?: unknown;
  }
  const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as Node;
  const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;
  const walk = (v: unknown, s: Node, path: string): void => {
    if (s.properties && s.additionalProperties === false)
      for (const [key, child] of Object.entries(v as Record<string, unknown>)) {
        const sub = s.properties[key];
        assert.ok(sub, `${path}${key} is not in values.schema.json`);
        // a group (no description of its own) is described by its members' rows
        if (sub.description) continue;
        assert.ok(sub.properties, `${path}${key} has no description`);
        walk(child, sub, `${path}${key}.`);
      }
  };
  walk(values, schema, '');
});

test('Chart.yaml version and appVersion are the package version (the image tag)', () => {
  const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as {
    version: string;
    appVersion: string;
  };
  const pkg = JSON.parse(readFileSync(join(CHART, '..', '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  assert.equal(chart.version, pkg.version);
  assert.equal(chart.appVersion, pkg.version);
});
