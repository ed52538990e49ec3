// The snapshot cache's writes prune the temporary files of writers killed between write and
// rename (older than a minute); a live writer's younger temporary file and other files stay.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { MemoryDatastore } from 'blockipam/core';
import { loadInputs } from '../../../ipam-plugin/host/snapshot-cache.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-snapcache-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

void describe('snapshot cache', () => {
  void it("prunes a killed writer's temporary file on its next write", async () => {
    const dir = join(tmp, 'cache');
    mkdirSync(dir);
    const dead = join(dir, 'snapshot-0123456789abcdef.json.4242');
    const live = join(dir, 'snapshot-0123456789abcdef.json.4343');
    const other = join(dir, 'notes.json.4242');
    for (const f of [dead, live, other]) writeFileSync(f, '{');
    const twoMinutesAgo = (Date.now() - 120_000) / 1000;
    utimesSync(dead, twoMinutesAgo, twoMinutesAgo);
    utimesSync(other, twoMinutesAgo, twoMinutesAgo);
    const got = await loadInputs(new MemoryDatastore({}), { dir, key: 'k', ttlMs: 10_000, node: 'n1' });
    assert.equal(got.cached, false);
    assert.equal(existsSync(dead), false, "the dead writer's temporary file is pruned");
    assert.equal(existsSync(live), true, 'a temporary file younger than a minute stays');
    assert.equal(existsSync(other), true, 'files of other names stay');
    const again = await loadInputs(new MemoryDatastore({}), { dir, key: 'k', ttlMs: 10_000, node: 'n1' });
    assert.equal(again.cached, true, 'the cache file itself was written');
  });
});
