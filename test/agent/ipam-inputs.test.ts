/**
 * The IPAM service's inputs from the agent's watches (block-controller/agent/ipam/inputs.ts), with
 * core's pod context over them: a watched pod whose UID is not the runtime's K8S_POD_UID (the
 * predecessor of a recreated pod of the same name, its watch event still to come) is read again
 * from the API server, and the predecessor's annotations never choose the pools.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryDatastore } from 'blockipam/core';
import type { Namespace, Pod } from 'blockipam/core';
import { createNodeIpam } from 'blockipam/core/node-ipam';
import { agentInputs } from '../../block-controller/agent/ipam/inputs.ts';
import type { AgentState } from '../../block-controller/agent/state.ts';
import { pool } from '../core/fixtures.ts';

const NODE = 'n1';
const pools = [
  pool('old-pool', { cidr: '10.71.0.0/16', blockSize: 26 }, '2026-01-01T00:00:00Z'),
  pool('new-pool', { cidr: '10.72.0.0/16', blockSize: 26 }, '2026-01-02T00:00:00Z'),
];
const namespace: Namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns' } };
/** Pod ns/web-0 of `uid`, asking for pool `wants` by annotation. */
const pod = (uid: string, wants: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web-0',
    namespace: 'ns',
    uid,
    annotations: { 'ipam.blockipam.io/ippools': JSON.stringify([wants]) },
  },
  spec: { nodeName: NODE },
});

/** The watched state, seeded from plain objects: the pod watch still holds `watchedPod`. */
function watched(watchedPod: Pod): AgentState {
  const state = {
    node: NODE,
    onChange: () => undefined,
    config: () => undefined,
    pools: () => pools,
    reservations: () => [],
    nodeObject: () => ({ metadata: { name: NODE, labels: {} } }),
    pod: (ns: string, name: string) =>
      ns === watchedPod.metadata.namespace && name === watchedPod.metadata.name ? watchedPod : undefined,
    namespace: (name: string) => (name === 'ns' ? namespace : undefined),
  };
  return state as unknown as AgentState;
}

const addCall = (id: string, uid: string | undefined) => ({
  attachment: { network: 'net', containerID: id, ifname: 'eth0' },
  node: NODE,
  pod: { namespace: 'ns', name: 'web-0', ...(uid ? { uid } : {}) },
  families: [4] as const,
  pools: { 4: [], 6: [] },
  staticIPs: [],
});

describe('agent IPAM inputs: the pod of the runtime’s UID', () => {
  // (runtime UID, pod at the API server, want: the pool's prefix, pod GETs at the API server)
  const cases: [string, string | undefined, Pod, RegExp, number][] = [
    // recreated: the watch has uid-old, the runtime and the API server uid-new
    ['recreated, watch behind', 'uid-new', pod('uid-new', 'new-pool'), /^10\.72\./, 1],
    // the watched pod is the runtime's: no read
    ['same pod', 'uid-old', pod('uid-new', 'new-pool'), /^10\.71\./, 0],
    // no UID from the runtime: the watched pod, no read
    ['no uid', undefined, pod('uid-new', 'new-pool'), /^10\.71\./, 0],
  ];
  for (const [name, uid, server, want, reads] of cases)
    test(name, async () => {
      const ds = new MemoryDatastore({ pools, namespaces: [namespace], pods: [server] });
      let podGets = 0;
      // the API server as the inputs see it, counting pod GETs
      const api = new Proxy(ds, {
        get(target, key) {
          if (key === 'getPod')
            return (...a: Parameters<MemoryDatastore['getPod']>) => ((podGets += 1), target.getPod(...a));
          const value: unknown = Reflect.get(target, key, target);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      const state = watched(pod('uid-old', 'old-pool'));
      const ipam = createNodeIpam({ ds, inputs: agentInputs({ state, ds: api }) });
      const out = await ipam.add(addCall(name.replace(/\W/g, ''), uid), AbortSignal.timeout(5_000));
      assert.equal(out.kind, 'allocated', JSON.stringify(out));
      assert.match(out.kind === 'allocated' ? (out.ips[0]?.address ?? '') : '', want);
      assert.equal(podGets, reads, 'pod GETs at the API server');
    });
});
