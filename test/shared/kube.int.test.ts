/**
 * block-controller/shared against the real API server: both clients from one kubeconfig, the
 * server override, and a watch that follows changes and restarts after errors.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { blockNameOf, mustParseCidr, newBlock } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { connectKube, createLogger, createMetrics, watchKind } from '../../block-controller/shared/index.ts';
import { eventually } from '../agent/agent-process.ts';
import { controlPlane, kubectl } from '../helpers/control-plane.ts';
import { installCrds } from '../helpers/crds.ts';
import { repoRoot } from '../plugin/helpers/plugin-exe.ts';

const BLOCKS = '/apis/ipam.blockipam.io/v1alpha1/ipamblocks';
const log = createLogger({ component: 'test', level: 'error' });

/** Waits until `check` holds (20 s at most). */
const until = (what: string, check: () => boolean): Promise<unknown> =>
  eventually(what, () => (check() ? true : undefined), 20_000);

describe('shared kube connection', () => {
  before(() => installCrds());
  after(() => {
    kubectl(['delete', 'ipamblocks', '--all']);
    kubectl(['delete', 'clusterrolebinding', 'shared-test-dev', '--ignore-not-found']);
  });

  test('the apiServer override replaces the server of both clients', async () => {
    const cp = controlPlane();
    const override = cp.apiUrl.replace('127.0.0.1', 'localhost');
    const conn = connectKube({ kubeconfig: cp.adminKubeconfig, apiServer: `${override}/` });
    try {
      assert.equal(conn.server, override);
      assert.equal(conn.kubeConfig.getCurrentCluster()?.server, override);
      assert.ok(Array.isArray(await conn.datastore.blocks.list()));
    } finally {
      conn.close();
    }
    assert.throws(() => connectKube({ kubeconfig: cp.adminKubeconfig, apiServer: 'ftp://x' }), /apiServer/);
  });

  test('in-cluster: the service-account directory with the override (no Service variables)', async () => {
    const cp = controlPlane();
    const dir = mkdtempSync(join(tmpdir(), 'sa-'));
    copyFileSync(cp.caFile, join(dir, 'ca.crt'));
    writeFileSync(join(dir, 'token'), cp.adminToken);
    const conn = connectKube({ serviceAccountDir: dir, apiServer: cp.apiUrl, env: {} });
    try {
      assert.ok(Array.isArray(await conn.datastore.blocks.list()));
    } finally {
      conn.close();
      rmSync(dir, { recursive: true, force: true }); // it holds the admin token
    }
  });

  test('a watch follows creates, updates and deletes', async () => {
    const conn = connectKube({ kubeconfig: controlPlane().adminKubeconfig });
    const events: string[] = [];
    const blocks = await watchKind<IPAMBlock>({
      resource: 'ipamblocks',
      path: BLOCKS,
      kubeConfig: conn.kubeConfig,
      transport: conn.transport,
      log,
      onEvent: (event, block) => events.push(`${event} ${block.metadata.name}`),
    });
    try {
      assert.equal(blocks.synced, true);
      const cidr = mustParseCidr('10.200.0.0/26');
      const name = blockNameOf(cidr);
      const created = await conn.datastore.blocks.create(newBlock({ cidr, pool: 'p', node: 'n1', nowMs: 0 }));
      await until('add', () => blocks.get(name) !== undefined);
      await conn.datastore.blocks.update({ ...created, spec: { ...created.spec, affinity: null } });
      await until('update', () => blocks.get(name)?.spec.affinity === null);
      await conn.datastore.blocks.delete(name);
      await until('delete', () => blocks.get(name) === undefined);
      assert.deepEqual(events, [`add ${name}`, `update ${name}`, `delete ${name}`]);
    } finally {
      await blocks.stop();
      conn.close();
    }
  });

  test('the LIST is paged: every object arrives, one request per page', async () => {
    const conn = connectKube({ kubeconfig: controlPlane().adminKubeconfig });
    const cidrs = [0, 1, 2, 3, 4].map((i) => mustParseCidr(`10.202.${i}.0/26`));
    for (const cidr of cidrs)
      await conn.datastore.blocks.create(newBlock({ cidr, pool: 'p', node: 'paged', nowMs: 0 }));
    let lists = 0;
    const transport = conn.transport;
    const request = transport.request.bind(transport);
    transport.request = (method: string, path: string, options?: unknown) => {
      if (method === 'GET' && path === BLOCKS) lists += 1;
      return request(method as never, path, options as never);
    };
    const blocks = await watchKind<IPAMBlock>({
      resource: 'ipamblocks',
      path: BLOCKS,
      labelSelector: undefined,
      kubeConfig: conn.kubeConfig,
      transport,
      log,
      listPageSize: 2,
    });
    try {
      const names = new Set(blocks.list().map((b) => b.metadata.name));
      for (const cidr of cidrs) assert.ok(names.has(blockNameOf(cidr)), `${blockNameOf(cidr)} listed`);
      assert.equal(lists, Math.ceil(names.size / 2), `${names.size} objects in pages of 2`);
    } finally {
      await blocks.stop();
      for (const cidr of cidrs) await conn.datastore.blocks.delete(blockNameOf(cidr));
      conn.close();
    }
  });

  test('under Bun, an idle watch resumes from its resourceVersion: no LIST, no restart', () => {
    // As the agent and controller executables run. A watch that carries nothing for its
    // inactivity time (here 700 ms) ends as client-node's own does, with a TimeoutError, and
    // client-node's ListWatch watches again from the last resourceVersion.
    const r = spawnSync(
      join(repoRoot, 'node_modules', '.bin', 'bun'),
      [
        join(import.meta.dirname, 'bun', 'idle-watch.ts'),
        controlPlane().adminKubeconfig,
        '700',
        '3000',
        '10.201.0.0/26',
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { lists: number; watches: number; restarts: number; seen: boolean };
    assert.equal(out.lists, 1, 'one LIST, at the start');
    assert.equal(out.restarts, 0, 'no error, so no restart');
    assert.ok(out.watches >= 3, `it watched again after each idle stretch (${out.watches} watches)`);
    assert.equal(out.seen, true, 'the resumed watch still delivers');
  });

  test('a watch refused by RBAC keeps restarting and syncs once it is allowed', async () => {
    const cp = controlPlane();
    const conn = connectKube({ kubeconfig: cp.devKubeconfig });
    const metrics = createMetrics('test');
    const blocks = await watchKind<IPAMBlock>({
      resource: 'ipamblocks',
      path: BLOCKS,
      kubeConfig: conn.kubeConfig,
      transport: conn.transport,
      log,
      metrics,
    });
    try {
      assert.equal(blocks.synced, false);
      assert.equal(blocks.connected, false);
      const bind = kubectl([
        'create',
        'clusterrolebinding',
        'shared-test-dev',
        '--clusterrole=cluster-admin',
        '--user=blockipam-dev',
      ]);
      assert.equal(bind.status, 0, bind.stderr);
      await until('synced after the binding', () => blocks.synced);
      const restarts = await metrics.registry.getSingleMetricAsString('blockipam_watch_restarts_total');
      assert.match(restarts, /resource="ipamblocks"[^}]*\} [1-9]/);
    } finally {
      await blocks.stop();
      conn.close();
    }
  });
});
