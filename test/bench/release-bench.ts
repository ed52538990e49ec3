/**
 * Release benchmark (a script, not a test): 1,000 leaked addresses in 20 blocks (50 per /26)
 * released in one releaseAddresses call on a real kube-apiserver, as `ipamctl release` and the
 * CNI GC do — items carry (address, handle, sequence, block). Prints the API requests (by method,
 * from the transport's counter) and the wall time of the call, median of `--runs` (default 3),
 * each on freshly seeded blocks. Starts its own control plane unless CP_* is set.
 *
 * Usage: node_modules/.bin/node test/bench/release-bench.ts [--runs N]
 */
import { parseArgs } from 'node:util';
import { addressTextAt, allocateOrdinal, mustParseCidr, newBlock, releaseAddresses } from 'blockipam/core';
import type { AddressRelease, IPAMBlock } from 'blockipam/core';
import { adminDatastore, wipeBlockipam } from '../helpers/crds.ts';

const BLOCKS = 20;
const PER_BLOCK = 50;
const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } });
const runs = Number(values.runs);

const ds = adminDatastore();
const results: { requests: Record<string, number>; total: number; ms: number }[] = [];
for (let run = 0; run < runs; run++) {
  await wipeBlockipam(ds);
  await ds.pools.create({ metadata: { name: 'bench' }, spec: { cidr: '10.77.0.0/16', blockSize: 26 } });
  const items: AddressRelease[] = [];
  const now = Date.now();
  for (let b = 0; b < BLOCKS; b++) {
    const cidr = mustParseCidr(`10.77.${b}.0/26`);
    let block: IPAMBlock = newBlock({ cidr, pool: 'bench', node: `node-${b % 5}`, nowMs: now });
    for (let i = 0; i < PER_BLOCK; i++) {
      const ordinal = i + 2; // after the network address and the gateway
      const handle = `k8s-pod-network.leak-${b}-${i}.eth0`;
      const done = allocateOrdinal(block, ordinal, { handle, node: `node-${b % 5}` }, now);
      if (!done) throw new Error(`ordinal ${ordinal} of ${cidr.base}`);
      block = done.block;
      items.push({
        address: addressTextAt(cidr, ordinal),
        handle,
        sequence: done.allocation.sequence,
        block: block.metadata.name,
      });
    }
    await ds.blocks.create(block);
  }
  const before = { ...ds.transport.stats.byMethod };
  const sent = ds.transport.stats.requests;
  const t0 = performance.now();
  const got = await releaseAddresses(ds, items);
  const ms = performance.now() - t0;
  if (got.released.length !== BLOCKS * PER_BLOCK)
    throw new Error(`released ${got.released.length} of ${BLOCKS * PER_BLOCK}`);
  const requests = Object.fromEntries(
    Object.entries(ds.transport.stats.byMethod).map(([m, n]) => [m, n - (before[m] ?? 0)]),
  );
  results.push({ requests, total: ds.transport.stats.requests - sent, ms: Math.round(ms) });
}
await wipeBlockipam(ds);
ds.close();
const sorted = [...results].sort((a, b) => a.ms - b.ms);
const median = sorted[Math.floor(sorted.length / 2)]!;
console.log(
  JSON.stringify({
    what: `releaseAddresses of ${BLOCKS * PER_BLOCK} addresses in ${BLOCKS} blocks`,
    requests: median.requests,
    total: median.total,
    medianMs: median.ms,
    runsMs: results.map((r) => r.ms),
  }),
);
process.exit(0);
