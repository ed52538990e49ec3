// A dual-stack ADD whose IPv6 half fails rolls its IPv4 address back; when that rollback cannot
// be written the address stays allocated (the runtime's DEL releases it) and the plugin logs what
// was left — before, core swallowed the failure without a trace.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { MemoryDatastore, UnavailableError } from 'blockipam/core';
import { createCoreBackend } from '../../../ipam-plugin/backend/core-backend.ts';
import { pool } from '../../core/fixtures.ts';
import { baseEnv, invoke, netconf } from '../helpers/run-dispatch.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-rollback-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const v4 = pool('v4', { cidr: '10.71.0.0/16', blockSize: 26 }, '2026-01-01T00:00:00Z');

void describe('dual-stack rollback', () => {
  void it('a rollback that cannot be written is logged with the address it left', async () => {
    const ds = new MemoryDatastore({ pools: [v4] }); // no IPv6 pool: the IPv6 half fails (NoPool)
    const update = ds.blocks.update.bind(ds.blocks);
    let updates = 0;
    ds.blocks.update = (b, o) =>
      ++updates === 1
        ? update(b, o)
        : Promise.reject(new UnavailableError('PUT ipamblocks: connection refused'));
    const { code, stdout, stderr } = await invoke(
      { CNI_COMMAND: 'ADD', ...baseEnv },
      netconf('1.1.0', { nodeName: 'n1', assignIPv6: true, cacheDir: join(tmp, 'c') }),
      createCoreBackend({ ds }),
    );
    assert.equal(code, 1);
    assert.equal((JSON.parse(stdout) as { code: number }).code, 101, stdout);
    const left = (await ds.blocks.list()).flatMap((b) => Object.values(b.spec.allocations));
    assert.equal(left.length, 1, 'the IPv4 address stays allocated (the rollback failed)');
    const line = stderr.split('\n').find((l) => l.includes('rollbackFailed'));
    assert.ok(line, `a log line names the failed rollback; stderr: ${stderr}`);
    const logged = JSON.parse(line) as { rollbackFailed: string[] };
    assert.match(
      logged.rollbackFailed[0] ?? '',
      /net1\.ctr1\.eth0: 10\.71\.\d+\.\d+ left allocated: PUT ipamblocks/,
    );
  });
});
