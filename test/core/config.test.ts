// core's SETTING_LIMITS are the CRD's own ranges (crds/ipamconfigs.yaml minimum / maximum), so a
// client refusing a value before sending it refuses exactly what the API server would.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { SETTING_LIMITS } from 'blockipam/core';

interface Crd {
  spec: {
    versions: {
      schema: {
        openAPIV3Schema: {
          properties: {
            spec: { properties: Record<string, { type: string; minimum?: number; maximum?: number }> };
          };
        };
      };
    }[];
  };
}

test('SETTING_LIMITS equal the CRD schema ranges of every integer field', () => {
  const crd = parse(readFileSync(new URL('../../crds/ipamconfigs.yaml', import.meta.url), 'utf8')) as Crd;
  const fields = crd.spec.versions[0]?.schema.openAPIV3Schema.properties.spec.properties ?? {};
  const fromCrd = Object.fromEntries(
    Object.entries(fields)
      .filter(([, f]) => f.type === 'integer')
      .map(([name, f]) => [name, { min: f.minimum, max: f.maximum }]),
  );
  assert.deepEqual(fromCrd, SETTING_LIMITS);
});
