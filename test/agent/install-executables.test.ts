// The plugin's executables in the CNI bin dir (install/installer.ts installExecutables): with a
// native forwarder, the TypeScript executable as blockipam-direct and the forwarder as blockipam,
// both 0755; without one, the TypeScript executable as blockipam and a blockipam-direct of an
// earlier install removed; copying again what is in place copies nothing.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { installExecutables } from '../../block-controller/agent/install/installer.ts';

describe('installExecutables', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bipam-exes-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'bin');
  const plugin = join(dir, 'ts-plugin');
  const forwarder = join(dir, 'forwarder');
  writeFileSync(plugin, 'typescript executable');
  writeFileSync(forwarder, 'go forwarder');
  chmodSync(plugin, 0o700);
  const content = (name: string) => readFileSync(join(bin, name), 'utf8');
  const mode = (name: string) => statSync(join(bin, name)).mode & 0o777;

  test('with a forwarder: blockipam-direct is the TypeScript executable, blockipam the forwarder', async () => {
    const r = await installExecutables({ cniBinDir: bin, pluginBinary: plugin, forwarderBinary: forwarder });
    assert.deepEqual(r, [
      { path: join(bin, 'blockipam-direct'), copied: true },
      { path: join(bin, 'blockipam'), copied: true },
    ]);
    assert.equal(content('blockipam-direct'), 'typescript executable');
    assert.equal(content('blockipam'), 'go forwarder');
    assert.deepEqual([mode('blockipam-direct'), mode('blockipam')], [0o755, 0o755]);
    const again = await installExecutables({
      cniBinDir: bin,
      pluginBinary: plugin,
      forwarderBinary: forwarder,
    });
    assert.deepEqual(
      again.map((x) => x.copied),
      [false, false],
    );
  });
  test('without: blockipam is the TypeScript executable, the stale blockipam-direct goes', async () => {
    const r = await installExecutables({ cniBinDir: bin, pluginBinary: plugin });
    assert.deepEqual(r, [{ path: join(bin, 'blockipam'), copied: true }]);
    assert.equal(content('blockipam'), 'typescript executable');
    assert.equal(mode('blockipam'), 0o755);
    assert.equal(existsSync(join(bin, 'blockipam-direct')), false);
  });
});
