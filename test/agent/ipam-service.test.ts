/**
 * The agent's node IPAM service as composed (block-controller/agent/ipam/service.ts) over the
 * memory datastore: the allocator's compare-and-swap backoff reaches it capped at 10 ms (the
 * option batching calls for).
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { MemoryDatastore } from 'blockipam/core';
import { datastoreInputs } from 'blockipam/core/node-ipam';
import type { AddCall } from 'blockipam/core/node-ipam';
import { agentNodeIpam } from '../../block-controller/agent/ipam/service.ts';
import { createLogger } from '../../block-controller/shared/index.ts';
import { probe } from '../core/batching-probe.ts';
import { pool } from '../core/fixtures.ts';

const NODE = 'n1';
const log = createLogger({ component: 'test', stream: new Writable({ write: (_c, _e, cb) => cb() }) });
const live = new AbortController().signal;

function addCall(id: string): AddCall {
  return {
    attachment: { network: 'n', containerID: id, ifname: 'eth0' },
    node: NODE,
    families: [4],
    pools: { 4: [], 6: [] },
    staticIPs: [],
  };
}

/** A memory datastore with one pool and the node, seen through the batching tests' probe. */
function setup() {
  const ds = new MemoryDatastore({
    pools: [pool('v4', { cidr: '10.70.0.0/24', blockSize: 26 })],
    nodes: [{ metadata: { name: NODE } }],
  });
  return { ds, p: probe(ds) };
}

describe('agent node IPAM service', () => {
  it("the allocator's backoff between compare-and-swap retries is capped at 10 ms", async () => {
    const { ds, p } = setup();
    // another writer changes the block before each of the first 4 UPDATEs: 4 server 409s
    let left = 4;
    p.foreignFirst = () => left-- > 0;
    const asked: number[] = [];
    const { ipam } = agentNodeIpam({
      node: NODE,
      view: p.ds,
      inputs: datastoreInputs(ds),
      log,
      // the top of core's jitter: uncapped, retries 2-4 would wait 19, 39 and 79 ms
      random: () => 0.99,
      sleep: (ms) => {
        asked.push(ms);
        return Promise.resolve();
      },
    });
    const out = await ipam.add(addCall('a'), live);
    assert.equal(out.kind, 'allocated', JSON.stringify(out));
    assert.equal(p.foreignWrites, 4);
    assert.deepEqual(asked, [9, 10, 10, 10]);
  });
});
