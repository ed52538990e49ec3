// Two controller processes against the real API server (the leader-election test): one
// leads and reclaims seeded leaks; kill -9 of the leader → the other takes over once the lease
// has expired (never before) and reclaims the next leaks; no address is released twice; SIGTERM
// releases the lease and exits 0.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IPAM_CONFIG_NAME } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import type { Lease } from '../../block-controller/controller/leader/lease.ts';
import { eventually } from '../agent/agent-process.ts';
import { controlPlane } from '../helpers/control-plane.ts';
import { blockObject, cleanClusterHooks, poolObject, startController, uniqueNamespace } from './helpers.ts';
import type { ControllerProcess } from './helpers.ts';

const ns = uniqueNamespace('ctl-leader');
const LEASE = `blockipam-controller-${ns}`;
const LEASE_S = 4;
let ds: KubeDatastore;
cleanClusterHooks({
  namespace: ns,
  nodes: ['ctl-n1'],
  onReady: (d) => (ds = d),
  setup: async (d) => {
    await d.pools.create(poolObject('ctl-lp', '10.73.0.0/16'));
    // 1 s grace: the processes run on the real clock.
    await d.configs.create({ metadata: { name: IPAM_CONFIG_NAME }, spec: { leakGracePeriodSeconds: 1 } });
  },
});

interface Controller extends ControllerProcess {
  id: string;
}

function start(id: string): Controller {
  return {
    id,
    ...startController([
      ...['--kubeconfig', controlPlane().adminKubeconfig, '--identity', id, '--metrics-port', '0'],
      ...['--lease-namespace', 'default', '--lease-name', LEASE, '--lease-duration-seconds', String(LEASE_S)],
      ...['--renew-deadline-seconds', '3', '--retry-period-seconds', '0.5'],
      ...['--resync-seconds', '1', '--debounce-ms', '100'],
    ]),
  };
}

/** A lease duration and a pass fit well inside 60 s. */
const until = <T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> =>
  eventually(what, probe, 60_000);

const lease = (): Promise<Lease> =>
  ds.transport.request<Lease>('GET', `/apis/coordination.k8s.io/v1/namespaces/default/leases/${LEASE}`);

/** Seeds `count` leaked allocations (pods that do not exist) in one block of ctl-n1. */
async function seedLeaks(batch: number, count: number): Promise<string[]> {
  const allocations = Array.from({ length: count }, (_, i) => ({
    ordinal: 2 + i,
    handle: `net.b${batch}-${i}.eth0`,
    node: 'ctl-n1',
    namespace: ns,
    pod: `gone-${batch}-${i}`,
    podUID: `uid-${batch}-${i}`,
  }));
  await ds.blocks.create(
    blockObject({ cidr: `10.73.${batch}.0/26`, pool: 'ctl-lp', affinity: 'ctl-n1', allocations }),
  );
  return allocations.map((a) => a.handle);
}

async function allocated(): Promise<number> {
  return (await ds.blocks.list()).reduce((n, b) => n + Object.keys(b.spec.allocations).length, 0);
}

/** The passes `c` completed (blockipam_controller_passes_total{outcome="done"} on its /metrics). */
async function passesDone(c: Controller): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${await c.port}/metrics`)).text();
  return Number(/^blockipam_controller_passes_total\{[^}]*outcome="done"[^}]*\} (\d+)/m.exec(text)?.[1] ?? 0);
}

const releasedHandles = (c: Controller): string[] =>
  c.lines.filter((l) => l.message === 'leaked address released').map((l) => String(l.handle));

describe('controller: leader election with two processes', () => {
  test('kill -9 the leader: the other takes over after the lease, nothing released twice', async () => {
    const procs = [start('ctl-a'), start('ctl-b')];
    try {
      const first = await until('a leader', async () => {
        const holder = (await lease().catch(() => undefined))?.spec?.holderIdentity;
        return procs.find((p) => p.id === holder);
      });
      const other = procs.find((p) => p !== first) as Controller;
      const batch1 = await seedLeaks(1, 20);
      await until('batch 1 reclaimed', async () => ((await allocated()) === 0 ? true : undefined));
      // The log line follows the write: wait for it before comparing.
      await until('batch 1 logged', () =>
        releasedHandles(first).length >= batch1.length ? true : undefined,
      );
      // two whole passes of the leader after it: a second release would show by now
      const passes = await passesDone(first);
      await until('two more passes', async () =>
        (await passesDone(first)) >= passes + 2 ? true : undefined,
      );
      assert.deepEqual(releasedHandles(first).sort(), [...batch1].sort());
      assert.deepEqual(releasedHandles(other), [], 'the standby released nothing');

      const before = await lease();
      first.child.kill('SIGKILL');
      const killedAt = Date.now();
      await first.exited;
      const batch2 = await seedLeaks(2, 20);
      const after = await until('the other to take over', async () => {
        const l = await lease();
        return l.spec?.holderIdentity === other.id ? l : undefined;
      });
      const takeoverMs = Date.now() - killedAt;
      assert.equal(after.spec?.leaseTransitions, (before.spec?.leaseTransitions ?? 0) + 1);
      // It waited for the lease to expire: the killed leader's last renewal was at most one
      // retry period (0.5 s) before the kill.
      assert.ok(takeoverMs >= (LEASE_S - 0.5) * 1000, `took over after ${takeoverMs} ms`);
      console.log(`takeover ${takeoverMs} ms after kill -9 (lease ${LEASE_S} s)`);
      await until('batch 2 reclaimed', async () => ((await allocated()) === 0 ? true : undefined));
      await until('batch 2 logged', () =>
        releasedHandles(other).length >= batch2.length ? true : undefined,
      );
      assert.deepEqual(releasedHandles(other).sort(), [...batch2].sort());
      const all = [...releasedHandles(first), ...releasedHandles(other)];
      assert.equal(new Set(all).size, all.length, 'no handle released twice');

      other.child.kill('SIGTERM');
      assert.equal(await other.exited, 0, 'clean exit on SIGTERM');
      assert.equal((await lease()).spec?.holderIdentity, '', 'lease released on shutdown');
    } finally {
      for (const p of procs)
        if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
    }
  });
});
