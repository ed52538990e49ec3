/**
 * The defects the fuzz run (fuzz.test.ts) found, one case each: a code other than 999 and a
 * message naming the field, nothing allocated.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { MemoryDatastore } from 'blockipam/core';
import { createCoreBackend } from '../../ipam-plugin/backend/core-backend.ts';
import { baseEnv, invoke, netconf } from './helpers/run-dispatch.ts';
import { pool } from '../core/fixtures.ts';

const tmp = mkdtempSync(join(tmpdir(), 'bipam-bad-input-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const podArgs = 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=p1';
const annotated = (pod: Record<string, string>, ns: Record<string, string> = {}): MemoryDatastore =>
  new MemoryDatastore({
    pools: [pool('auto', { cidr: '10.50.0.0/16', blockSize: 26 }, '2026-01-01T00:00:00Z')],
    namespaces: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns1', annotations: ns } }],
    pods: [{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p1', namespace: 'ns1', annotations: pod } }],
  });

const cases: [string, Partial<Record<string, string>>, string, MemoryDatastore, number, RegExp][] = [
  // a 100,000-deep cniVersion: JSON.stringify in the message overflowed the stack (999)
  [
    'deep cniVersion',
    {},
    netconf('1.0.0').replace('"1.0.0"', `${'['.repeat(100_000)}${']'.repeat(100_000)}`),
    annotated({}),
    1,
    /cniVersion: config is a JSON array/,
  ],
  // lengths past the CRD's: the API server's 422 (106) named the block, not the field
  [
    'long name',
    {},
    netconf('1.0.0', {}, { name: 'n'.repeat(257) }),
    annotated({}),
    7,
    /name: 257 characters/,
  ],
  [
    'long nodeName',
    {},
    netconf('1.0.0', { nodeName: 'n'.repeat(254) }),
    annotated({}),
    7,
    /ipam\.nodeName: 254/,
  ],
  [
    'long pool',
    {},
    netconf('1.0.0', { ipv4Pools: ['auto', 'p'.repeat(254)] }),
    annotated({}),
    7,
    /ipam\.ipv4Pools\[1\]: 254/,
  ],
  [
    'long K8S_POD_UID',
    { CNI_ARGS: `${podArgs};K8S_POD_UID=${'u'.repeat(65)}` },
    netconf('1.0.0'),
    annotated({}),
    4,
    /K8S_POD_UID: longer than 64/,
  ],
  [
    'long CNI_CONTAINERID',
    { CNI_CONTAINERID: 'c'.repeat(510) },
    netconf('1.0.0'),
    annotated({}),
    4,
    /CNI_CONTAINERID is 510 characters: the allocation handle .* would be 520/,
  ],
  // a refused pool or address names the field that asked for it (the value alone did not)
  [
    'pod pool',
    { CNI_ARGS: podArgs },
    netconf('1.0.0'),
    annotated({ 'ipam.blockipam.io/ippools': '[""]' }),
    104,
    /pod annotation ipam\.blockipam\.io\/ippools: requested IP pool "" does not exist/,
  ],
  [
    'namespace pool',
    { CNI_ARGS: podArgs },
    netconf('1.0.0'),
    annotated({}, { 'ipam.blockipam.io/ippools': '["gone"]' }),
    104,
    /namespace annotation ipam\.blockipam\.io\/ippools: requested IP pool "gone"/,
  ],
  [
    'netconf pool',
    {},
    netconf('1.0.0', { ipv4Pools: ['gone'] }),
    annotated({}),
    104,
    /ipam\.ipv4Pools \/ ipam\.ipv6Pools: requested IP pool "gone"/,
  ],
  ['CNI_ARGS IP', { CNI_ARGS: 'IP=0.0.0.0' }, netconf('1.0.0'), annotated({}), 102, /CNI_ARGS IP: NotInPool/],
  [
    'runtimeConfig.ips',
    {},
    netconf('1.0.0', {}, { runtimeConfig: { ips: ['10.99.0.1/24'] } }),
    annotated({}),
    102,
    /runtimeConfig\.ips: NotInPool/,
  ],
  [
    'args.cni.ips',
    {},
    netconf('1.0.0', {}, { args: { cni: { ips: ['10.99.0.1'] } } }),
    annotated({}),
    102,
    /args\.cni\.ips: NotInPool/,
  ],
  [
    'ip-addrs',
    { CNI_ARGS: podArgs },
    netconf('1.0.0'),
    annotated({ 'ipam.blockipam.io/ip-addrs': '["10.99.0.1"]' }),
    102,
    /pod annotation ipam\.blockipam\.io\/ip-addrs: NotInPool/,
  ],
  // the forwarder forwards only an absolute path of at most 104 bytes (107 with the wire
  // version appended) without NUL; anything else takes the direct path, which refuses it naming
  // the field
  [
    'agentSocket too long',
    {},
    netconf('1.0.0', { agentSocket: `/${'a'.repeat(104)}` }),
    annotated({}),
    7,
    /ipam\.agentSocket: 105 bytes, at most 104 \(a Unix socket path with "\.v3" appended\)/,
  ],
  [
    'NUL in agentSocket',
    {},
    netconf('1.0.0', { agentSocket: `${tmp}/agent\0.sock` }),
    annotated({}),
    7,
    /ipam\.agentSocket: holds a NUL byte/,
  ],
];

for (const [name, env, stdin, ds, code, message] of cases) {
  void it(`${name}: code ${code} naming the field, nothing allocated`, async () => {
    const withDir = stdin.replace('"nodeName":"node-a"', `"nodeName":"node-a","cacheDir":"${tmp}"`);
    const r = await invoke({ ...baseEnv, CNI_COMMAND: 'ADD', ...env }, withDir, createCoreBackend({ ds }));
    assert.equal(r.json?.code, code, r.stdout);
    assert.match(String(r.json?.details), message);
    const allocations = (await ds.blocks.list()).flatMap((b) => Object.values(b.spec.allocations));
    assert.deepEqual(allocations, []);
  });
}
