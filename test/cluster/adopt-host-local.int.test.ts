/**
 * Adopting a kind-shaped cluster node by node, on a cluster of its own (the scenario and what it
 * checks: adopt.ts): 30 pods and two pinging across nodes keep their addresses and lose no ping;
 * the second node's agent is SIGKILLed right after its label; new pods, an old pod's DEL,
 * `ipamctl check` and a rollback follow.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startOwnCluster } from '../helpers/cluster.ts';
import { adoptionScenario } from './adopt.ts';

test('adopting a kind-shaped cluster node by node: addresses and pings kept, SIGKILL mid-import, rollback', async () => {
  const own = startOwnCluster({ podNetwork: 'kind', nodes: 3 });
  let hostUnchanged: boolean;
  try {
    const f = await adoptionScenario(own.cluster, { podsPerNode: 10, checks: true });
    const took = f.adoptMs.map((ms) => (ms / 1000).toFixed(1)).join(' / ');
    const pings = f.pings.map((p) => `${p.name} ${p.sent - p.received} lost of ${p.sent}`).join(', ');
    console.log(
      `adoption: ${f.pods} pods; nodes adopted in ${took} s (node ${f.killed + 1}'s agent SIGKILLed); pings ${pings}`,
    );
  } finally {
    hostUnchanged = own.stop();
  }
  assert.ok(hostUnchanged, 'the teardown found the host changed');
});
