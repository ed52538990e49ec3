/**
 * The agent's node IPAM service as composed (block-controller/agent/ipam/service.ts) over the
 * memory datastore: the allocator's compare-and-swap backoff reaches it capped at 10 ms (the
 * option batching calls for), and the batching counters reach the agent's metrics
 * (block-controller/agent/metrics.ts observeBatching).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isUnavailable, MemoryDatastore, UnavailableError } from 'blockipam/core';
import { datastoreInputs } from 'blockipam/core/node-ipam';
import type { AddCall } from 'blockipam/core/node-ipam';
import { agentNodeIpam } from '../../block-controller/agent/ipam/service.ts';
import { createAgentMetrics, observeBatching } from '../../block-controller/agent/metrics.ts';
import { deferred, probe } from '../core/batching-probe.ts';
import { pool } from '../core/fixtures.ts';
import { quietLog as log } from './fixtures.ts';

const NODE = 'n1';
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

/** Waits, turn by turn of the event loop, until `condition` holds (fails after 10,000 turns). */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; !condition(); turn++) {
    if (turn > 10_000) assert.fail(`never happened: ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** `metric{…result="<result>"…} value` from the exposition text, per result. */
function byResult(text: string, metric: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(new RegExp(`^${metric}\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
    assert.match(m[1]!, new RegExp(`node="${NODE}"`));
    out[/result="(\w+)"/.exec(m[1]!)![1]!] = Number(m[2]);
  }
  return out;
}

describe('agent batching metrics', () => {
  it('block UPDATEs and changes by result, from 0 before the service exists', async () => {
    const metrics = createAgentMetrics();
    const { ds, p } = setup();
    let service: ReturnType<typeof agentNodeIpam> | undefined = undefined;
    observeBatching(metrics, NODE, () => service?.batching.stats());
    const scrape = async () => {
      const text = await metrics.registry.metrics();
      assert.match(text, /# HELP blockipam_agent_block_updates_total Block UPDATEs/);
      assert.match(text, /# HELP blockipam_agent_block_changes_total Block changes/);
      return {
        updates: byResult(text, 'blockipam_agent_block_updates_total'),
        changes: byResult(text, 'blockipam_agent_block_changes_total'),
      };
    };
    assert.deepEqual(await scrape(), {
      updates: { written: 0, conflict: 0, failed: 0 },
      changes: { written: 0, rejected: 0, aborted: 0, refused: 0, deferred: 0 },
    });
    service = agentNodeIpam({
      node: NODE,
      view: p.ds,
      inputs: datastoreInputs(ds),
      log,
      sleep: () => Promise.resolve(),
    });
    const { ipam, batching } = service;
    assert.equal((await ipam.add(addCall('warm'), live)).kind, 'allocated'); // claims the block
    // a: its UPDATE held in flight; b queued behind it, then aborted: dropped, never sent
    const gate = deferred();
    p.gate = gate.promise;
    const a = ipam.add(addCall('a'), live);
    await until(() => p.counts.updates === 2, "a's UPDATE sent");
    const giveUp = new AbortController();
    const b = ipam.add(addCall('b'), giveUp.signal);
    await until(() => batching.stats().changesAccepted === 3, "b's change queued");
    giveUp.abort(new Error('budget spent'));
    await assert.rejects(b, /budget spent/);
    gate.resolve();
    p.gate = undefined;
    assert.equal((await a).kind, 'allocated');
    // c: another writer first (409), then written on the retry
    let foreign = 1;
    p.foreignFirst = () => foreign-- > 0;
    assert.equal((await ipam.add(addCall('c'), live)).kind, 'allocated');
    // d: the API server unavailable
    let failing = 1;
    p.failWith = () => (failing-- > 0 ? new UnavailableError('injected') : undefined);
    await assert.rejects(ipam.add(addCall('d'), live), isUnavailable);
    assert.deepEqual(await scrape(), {
      updates: { written: 3, conflict: 1, failed: 1 },
      changes: { written: 3, rejected: 2, aborted: 1, refused: 0, deferred: 0 },
    });
  });
});
