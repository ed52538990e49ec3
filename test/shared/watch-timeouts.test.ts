// The daemons' watch stream under Bun (block-controller/shared/watch.ts): an idle stream and an
// API server that never answers end differently — the first resumes quietly (TimeoutError, as
// client-node's own), the second is an error (so `connected` goes false) — and every watch asks
// for bookmarks and a server-side timeout shorter than the client's.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../plugin/helpers/plugin-exe.ts';

void describe('watch timeouts (Bun)', () => {
  void it('idle after a 200: TimeoutError; no answer at all: an ETIMEDOUT error; bookmarks and timeoutSeconds asked for', () => {
    const r = spawnSync(
      join(repoRoot, 'node_modules', '.bin', 'bun'),
      [join(import.meta.dirname, 'bun', 'watch-timeouts.ts')],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      silent: { name?: string; code?: string };
      idle: { name?: string; code?: string };
      queries: Record<string, string>;
    };
    assert.equal(out.idle.name, 'TimeoutError');
    assert.equal(out.silent.code, 'ETIMEDOUT');
    assert.notEqual(out.silent.name, 'TimeoutError', 'not taken for an idle stream');
    const query = new URLSearchParams(out.queries['/idle']);
    assert.equal(query.get('watch'), 'true');
    assert.equal(query.get('allowWatchBookmarks'), 'true');
    assert.equal(query.get('timeoutSeconds'), '1', 'floor(0.3 s) − 5 s, at least 1 s');
    assert.equal(query.get('resourceVersion'), '7');
  });
});
