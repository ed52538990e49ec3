/**
 * Bad input, counted (docs/security.md §Bad input: the plugin's fuzz run): fast-check drives the
 * dispatcher over core's MemoryDatastore with hostile CNI_* variables, netconf fields,
 * runtimeConfig capabilities and pod / namespace annotations (helpers/fuzz-inputs.ts). Every
 * input must end in a valid result or in one CNI error document whose code is a documented one
 * (never 999) and whose message names a mutated field or quotes its value; nothing else on
 * stdout; no allocation left by a failed ADD, none after ADD + DEL, none changed by a failed
 * DEL / CHECK / GC / STATUS. Prints the outcomes by (command, code) and field named.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import fc from 'fast-check';
import { InvalidError, MemoryDatastore, type IPAMBlock, type IPPool } from 'blockipam/core';
import { createCoreBackend } from '../../ipam-plugin/backend/core-backend.ts';
import { CniCode } from 'blockipam/core/cni/errors';
import { runDirect as dispatch } from '../../ipam-plugin/direct.ts';
import { caseArb, Raw, type Case, type Mutation } from './helpers/fuzz-inputs.ts';

/** Fixed, so a failure reproduces; change it (and docs/security.md) to explore further. */
const SEED = 20_230_005;
/** Fuzzed invocations; with the clean ADDs and DELs around them, ~3,000 dispatcher calls. */
const RUNS = 2_000;

const dir = mkdtempSync(join(tmpdir(), 'bipam-fuzz-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const pool = (name: string, cidr: string, extra: Partial<IPPool['spec']> = {}): IPPool => ({
  apiVersion: 'ipam.blockipam.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name, creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { cidr, blockSize: cidr.includes(':') ? 122 : 26, ...extra },
});

/** The length limits crds/ipamblocks.yaml puts on an allocation (the memory store has none). */
const limits: readonly [keyof IPAMBlock['spec']['allocations'][string], number][] = [
  ['handle', 512],
  ['network', 256],
  ['namespace', 63],
  ['pod', 253],
  ['podUID', 64],
  ['node', 253],
];

/** A 422 like the API server's for a block whose allocations break the CRD's limits. */
function checkBlock(block: IPAMBlock): void {
  for (const [ordinal, a] of Object.entries(block.spec.allocations))
    for (const [field, max] of limits) {
      const v = a[field];
      if (typeof v === 'string' && v.length > max)
        throw new InvalidError(
          `IPAMBlock.ipam.blockipam.io "${block.metadata.name}" is invalid: spec.allocations.${ordinal}.${field}: Too long: may not be more than ${max} bytes`,
        );
    }
}

function datastore(pod: Record<string, string>, namespace: Record<string, string>): MemoryDatastore {
  const ds = new MemoryDatastore({
    pools: [
      pool('auto', '10.50.0.0/16'),
      pool('auto6', 'fd00:50::/48'),
      pool('manual', '10.60.0.0/16', { assignmentMode: 'Manual' }),
    ],
    namespaces: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns1', annotations: namespace } }],
    pods: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p1', namespace: 'ns1', uid: 'uid-p1', annotations: pod },
        spec: { nodeName: 'node-1' },
      },
    ],
  });
  const [create, update] = [ds.blocks.create.bind(ds.blocks), ds.blocks.update.bind(ds.blocks)];
  ds.blocks.create = async (b, o) => (checkBlock(b), create(b, o));
  ds.blocks.update = async (b, o) => (checkBlock(b), update(b, o));
  return ds;
}

interface Invocation {
  readonly env: Record<string, string | undefined>;
  readonly stdin: string;
  readonly pod: Record<string, string>;
  readonly namespace: Record<string, string>;
}

/** The netconf path a field names (`ipam.x` → ipam, x). */
function pathOf(field: string): string[] {
  if (field.startsWith('runtimeConfig.')) return ['runtimeConfig', field.slice('runtimeConfig.'.length)];
  if (field === 'args.cni.ips') return ['args', 'cni', 'ips'];
  if (field.startsWith('ipam.')) return ['ipam', field.slice('ipam.'.length)];
  return [field];
}

const pathValue = (v: unknown): unknown =>
  typeof v === 'string' && v.startsWith('{dir}/') ? `${dir}/${v.slice('{dir}/'.length)}` : v;

/** Sets (own property, so `__proto__` is a key) or, for undefined, removes a netconf field. */
function setField(conf: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let at: unknown = conf;
  for (const key of path.slice(0, -1)) {
    const obj = at as Record<string, unknown>;
    if (!Object.hasOwn(obj, key)) obj[key] = {};
    at = obj[key];
    if (typeof at !== 'object' || at === null || Array.isArray(at) || at instanceof Raw) return;
  }
  const last = path.at(-1) as string;
  if (value === undefined) delete (at as Record<string, unknown>)[last];
  else Object.defineProperty(at, last, { value, enumerable: true, writable: true, configurable: true });
}

/** JSON text with each {@link Raw} spliced in verbatim. */
function stringify(conf: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(conf, (_k, v: unknown) =>
    v instanceof Raw ? `@@raw${raws.push(v.text) - 1}@@` : v,
  );
  return text.replace(/"@@raw(\d+)@@"/g, (_m, n: string) => raws[Number(n)] as string);
}

function build(c: Case, command = c.command, mutations = c.mutations): Invocation {
  const env: Record<string, string | undefined> = {
    CNI_COMMAND: command,
    CNI_CONTAINERID: 'ctr1',
    CNI_NETNS: '/var/run/netns/fuzz',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    CNI_ARGS: c.withPod ? 'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=p1;K8S_POD_UID=uid-p1' : '',
  };
  const conf: Record<string, unknown> = {
    cniVersion: c.cniVersion,
    name: 'net1',
    type: 'ptp',
    ipam: { type: 'blockipam', nodeName: 'node-1', cacheDir: dir },
    ...(command === 'GC' ? { 'cni.dev/valid-attachments': [{ containerID: 'ctr1', ifname: 'eth0' }] } : {}),
  };
  const pod: Record<string, string> = {};
  const namespace: Record<string, string> = {};
  let stdin: string | undefined;
  for (const { field, value } of mutations) {
    if (field.startsWith('CNI_')) env[field] = value as string | undefined;
    else if (field === 'stdin') stdin = value as string;
    else if (field === 'pod.ippools' || field === 'pod.ip-addrs' || field === 'namespace.ippools') {
      const [on, key] = field.split('.') as [string, string];
      const target = on === 'pod' ? pod : namespace;
      if (value === undefined) delete target[`ipam.blockipam.io/${key}`];
      else target[`ipam.blockipam.io/${key}`] = value as string;
    } else setField(conf, pathOf(field), pathValue(value));
  }
  return { env, stdin: stdin ?? stringify(conf), pod, namespace };
}

interface Outcome {
  readonly code: number;
  readonly stdout: string;
}

async function run(inv: Invocation, ds: MemoryDatastore): Promise<Outcome> {
  let stdout = '';
  const code = await dispatch(
    {
      env: inv.env,
      readStdin: () => inv.stdin,
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: () => undefined },
    },
    {
      backend: () => Promise.resolve(createCoreBackend({ ds })),
      lock: () => Promise.resolve({ waited: false, release: () => Promise.resolve() }),
    },
  );
  return { code, stdout };
}

/** Every allocation's handle and address, sorted. */
async function allocations(ds: MemoryDatastore): Promise<string[]> {
  return (await ds.blocks.list())
    .flatMap((b) => Object.entries(b.spec.allocations).map(([o, a]) => `${a.handle} ${b.spec.cidr}+${o}`))
    .sort();
}

/** The one JSON document on stdout, or a failed assertion. */
function oneDocument(stdout: string): Record<string, unknown> {
  assert.ok(stdout.endsWith('\n') && stdout.indexOf('\n') === stdout.length - 1, `one line: ${stdout}`);
  const doc = JSON.parse(stdout) as unknown;
  assert.ok(typeof doc === 'object' && doc !== null && !Array.isArray(doc), stdout);
  return doc as Record<string, unknown>;
}

/** What a message about `field` may say: its name in the error's terms. */
function fieldPattern(field: string): RegExp {
  const literal = (s: string): RegExp => new RegExp(s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  if (field === 'stdin') return /network config/;
  if (field === 'cniVersion') return /cniVersion|CNI version/;
  if (field === 'name') return /(^|\s)name: /;
  if (field === 'ipam' || field === 'args') return new RegExp(`(^|\\s)${field}\\b`);
  if (field === 'runtimeConfig.io.kubernetes.cri.pod-annotations')
    return /io\.kubernetes\.cri\.pod-annotations|pod annotation ipam\.blockipam\.io\//;
  if (field === 'pod.ippools' || field === 'pod.ip-addrs' || field === 'namespace.ippools') {
    const [on, key] = field.split('.') as [string, string];
    return literal(`${on} annotation ipam.blockipam.io/${key}`);
  }
  // `ipam.x: …`, or `ipam: x and y …` for a rule over two fields
  if (field.startsWith('ipam.')) return new RegExp(`ipam(\\.|:.*\\b)${field.slice(5)}\\b`);
  return literal(field);
}

/** Strings inside a value (at most 3 levels, JSON text in annotations included), 1–300 chars. */
function strings(v: unknown, depth = 0): string[] {
  if (depth > 3) return [];
  if (typeof v === 'string') {
    let inner: unknown;
    try {
      inner = JSON.parse(v);
    } catch {
      inner = undefined;
    }
    return [
      ...(v.length > 0 && v.length <= 300 ? [v] : []),
      ...(inner === undefined ? [] : strings(inner, depth + 1)),
    ];
  }
  if (typeof v === 'object' && v !== null && !(v instanceof Raw))
    return Object.values(v).flatMap((x) => strings(x, depth + 1));
  return [];
}

/** The mutated field the error names, else `value of <field>` when it quotes one, else undefined. */
function named(doc: Record<string, unknown>, mutations: readonly Mutation[]): string | undefined {
  const text = `${String(doc.msg)} ${typeof doc.details === 'string' ? doc.details : ''}`;
  const byName = mutations.find((m) => fieldPattern(m.field).test(text));
  if (byName) return byName.field;
  const byValue = mutations.find((m) =>
    strings(m.value).some((s) => text.includes(s) || text.includes(JSON.stringify(s).slice(1, -1))),
  );
  return byValue ? `value of ${byValue.field}` : undefined;
}

const documented = new Set<number>(Object.values(CniCode).filter((c) => c !== CniCode.internal));
const counts = new Map<string, Map<string, number>>();
/** Dispatcher calls: the fuzzed ones, the clean ADDs before them, the DELs after a good ADD. */
const calls = { fuzzed: 0, cleanAdd: 0, delAfterAdd: 0 };

function count(command: string | undefined, code: number, field: string): void {
  const cmd = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS', 'VERSION'].includes(command ?? '')
    ? (command as string)
    : command
      ? 'other'
      : '(unset)';
  const key = `${cmd}\t${code}`;
  const row = counts.get(key) ?? new Map<string, number>();
  row.set(field, (row.get(field) ?? 0) + 1);
  counts.set(key, row);
}

/** Checks one fuzzed invocation (and its clean ADD before / DEL after). */
async function check(c: Case): Promise<void> {
  const inv = build(c);
  const ds = datastore(inv.pod, inv.namespace);
  // DEL, CHECK, GC, STATUS find one allocation, of the attachment they name unless mutated.
  if (c.command !== 'ADD') calls.cleanAdd++;
  if (c.command !== 'ADD')
    assert.equal((await run(build({ ...c, withPod: false }, 'ADD', []), ds)).code, 0, 'the clean ADD');
  const before = await allocations(ds);
  const out = await run(inv, ds);
  calls.fuzzed++;
  const command = inv.env.CNI_COMMAND;
  if (out.code !== 0) {
    assert.equal(out.code, 1);
    const doc = oneDocument(out.stdout);
    assert.ok(documented.has(doc.code as number), `code ${String(doc.code)}: ${out.stdout}`);
    const field = named(doc, c.mutations);
    assert.ok(field, `the message names no mutated field: ${out.stdout}`);
    count(command, doc.code as number, field);
    // A failed ADD leaves nothing; any other failed command changes nothing.
    assert.deepEqual(await allocations(ds), c.command === 'ADD' ? [] : before, out.stdout);
    return;
  }
  count(command, 0, '-');
  if (command === 'ADD' || command === 'VERSION') {
    const doc = oneDocument(out.stdout);
    assert.equal(typeof doc.cniVersion, 'string');
  } else assert.equal(out.stdout, '', 'DEL, CHECK, GC, STATUS and the about text print nothing');
  if (command === 'ADD') {
    assert.equal((await allocations(ds)).length > 0, true, 'a successful ADD allocated');
    const del = await run({ ...inv, env: { ...inv.env, CNI_COMMAND: 'DEL' } }, ds);
    calls.delAfterAdd++;
    assert.deepEqual([del.code, del.stdout], [0, ''], 'DEL after ADD');
    assert.deepEqual(await allocations(ds), [], 'nothing left after ADD + DEL');
  } else if (command === 'DEL' || command === 'GC') {
    const now = await allocations(ds);
    assert.ok(
      now.every((a) => before.includes(a)),
      'DEL / GC only release',
    );
  } else assert.deepEqual(await allocations(ds), before, 'CHECK / STATUS change nothing');
}

void it(`${RUNS} hostile invocations: a valid result or a documented code naming the field`, async (t) => {
  await fc.assert(fc.asyncProperty(caseArb, check), { seed: SEED, numRuns: RUNS });
  const rows = [...counts].sort(([a], [b]) => a.localeCompare(b));
  t.diagnostic(
    `seed ${SEED}: ${calls.fuzzed} fuzzed invocations, ${calls.cleanAdd} clean ADDs before them, ${calls.delAfterAdd} DELs after a good ADD`,
  );
  t.diagnostic('command\tcode\tcount\tfield named (count)');
  for (const [key, row] of rows) {
    const total = [...row.values()].reduce((a, b) => a + b, 0);
    const top = [...row]
      .sort((a, b) => b[1] - a[1])
      .map(([f, n]) => `${f} ${n}`)
      .join(', ');
    t.diagnostic(`${key}\t${total}\t${top}`);
  }
});
