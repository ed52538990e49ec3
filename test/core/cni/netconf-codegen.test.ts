/** The committed ahead-of-time netconf validator is what the schema compiles to. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateValidator } from '../../../scripts/build-plugin-codegen.ts';

void describe('codegen', () => {
  void it('the committed validator is the ajv standalone output of netconf-schema.ts', () => {
    const committed = readFileSync(
      join(import.meta.dirname, '../../../core/cni/netconf-validate.generated.ts'),
      'utf8',
    );
    assert.equal(committed, generateValidator());
  });
});
