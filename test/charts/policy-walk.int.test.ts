/**
 * Every field probed: the chart's per-node admission policy against every change a node
 * credential can send, generated from the schemas, on the real API server. For each path of the
 * IPAMBlock CRD's OpenAPI schema (every property, every existing map key and list item, a new
 * one of each, an unknown field) and of ObjectMeta (read from the API server's own OpenAPI, so a
 * field Kubernetes adds is probed too), each mutation (another value, 2^53+1 for integers, null,
 * removal, addition) is sent as a dry-run UPDATE with the agent's token and with the plugin's
 * token of node walk-n1, against a block of walk-n2, an unowned block and walk-n1's own block.
 * The allowed single-field changes are few and named below (ALLOWED); every other probe must be
 * refused or leave the stored object unchanged (the API server ignores or resets it). The same
 * mutations of core's claim are sent as dry-run CREATEs with both tokens: only the values core's
 * claim takes from the node's clock may differ from what it computes. Then core's
 * own writes (allocate, release, borrow, both inside one batched write, the claim, deleting an
 * empty block) must be admitted, and every other verb (PATCH of each kind, DELETE of a non-empty
 * or foreign block, deletecollection, the status subresource) refused. The node ServiceAccount's
 * other write, TokenRequest, gets the same walk over its spec. The counts are printed (and kept
 * in docs/security.md).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { allocateOrdinal, newBlock, nodeLabel, parseCidr, releaseHandle } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { controlPlane } from '../helpers/control-plane.ts';
import { REPO } from './helm.ts';
import { admin, adminOk, ChartIdentities } from './identities.ts';

const NS = 'chart-walk';
const RELEASE = 'walk';
const chart = new ChartIdentities(NS, RELEASE);
const N1 = 'walk-n1';
const N2 = 'walk-n2';
const POOL = 'walk-pool';
const GROUP_PATH = '/apis/ipam.blockipam.io/v1alpha1/ipamblocks';
/** A number no probe uses otherwise: replaced by 2^53+1 in the JSON text (JavaScript cannot hold it). */
const UNSAFE = 7777777777777.25;
const UNSAFE_TEXT = '9007199254740993';
const HOUR = 3_600_000;
const NOW = Date.now();

interface Answer {
  status: number;
  body: string;
}

/** One HTTP request to the API server with `token` (raw JSON text in and out). */
function call(
  token: string,
  method: string,
  path: string,
  body?: string,
  type = 'application/json',
): Promise<Answer> {
  const cp = controlPlane();
  const url = new URL(path, cp.apiUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca: readFileSync(cp.caFile),
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': type }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** JSON text of `value`, with {@link UNSAFE} written as 2^53+1. */
const jsonText = (value: unknown): string => JSON.stringify(value).replaceAll(String(UNSAFE), UNSAFE_TEXT);

const tokenOf = (kubeconfig: string): string =>
  (JSON.parse(readFileSync(kubeconfig, 'utf8')) as { users: { user: { token: string } }[] }).users[0]!.user
    .token;

/** A block as core builds it: allocations of [ordinal, node], then ordinals allocated and released. */
function coreBlock(
  cidr: string,
  affinity: string | null,
  allocations: [number, string][],
  freed: number[],
): IPAMBlock {
  let block = newBlock({ cidr: parseCidr(cidr)!, pool: POOL, node: affinity, nowMs: NOW - 2 * HOUR });
  const owner = (ordinal: number, node: string, handle: string): Parameters<typeof allocateOrdinal>[2] => ({
    handle,
    node,
    network: 'walk-net',
    namespace: 'default',
    pod: `pod-${ordinal}`,
    podUID: `00000000-0000-0000-0000-${String(ordinal).padStart(12, '0')}`,
  });
  for (const [ordinal, node] of allocations)
    block = allocateOrdinal(
      block,
      ordinal,
      owner(ordinal, node, `walk.${node}.${ordinal}`),
      NOW - HOUR,
    )!.block;
  for (const ordinal of freed) {
    block = allocateOrdinal(block, ordinal, owner(ordinal, N2, `walk.gone.${ordinal}`), NOW - HOUR)!.block;
    block = releaseHandle(block, `walk.gone.${ordinal}`, {}, NOW - HOUR / 2).block;
  }
  return block;
}

/** The stored object without what the API server maintains on every write. */
function comparable(object: Record<string, unknown>): unknown {
  const metadata = { ...(object.metadata as Record<string, unknown>) };
  delete metadata.resourceVersion;
  delete metadata.managedFields;
  delete metadata.generation;
  return { ...object, metadata };
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Path = (string | number)[];

/** One probe: a change at `path` and what it does. */
interface Mutation {
  path: Path;
  /** 'set', 'remove', 'add', 'unsafe', 'null' */
  kind: string;
  apply(object: Json): Json;
}

interface Schema {
  type?: string;
  format?: string;
  nullable?: boolean;
  required?: string[];
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  maximum?: number;
  $ref?: string;
  allOf?: Schema[];
  default?: unknown;
}

const clone = <T>(value: T): T => structuredClone(value);

function at(object: Json, path: Path): Json | undefined {
  let here: Json | undefined = object;
  for (const key of path) here = (here as Record<string, Json> | Json[] | undefined)?.[key as never];
  return here;
}

/** `object` with the value at `path` set (or removed when `value` is undefined). */
function withValue(object: Json, path: Path, value: Json | undefined): Json {
  const copy = clone(object);
  let parent = copy as Record<string | number, Json>;
  for (const key of path.slice(0, -1)) {
    if (parent[key] === undefined || parent[key] === null) parent[key] = typeof key === 'number' ? [] : {};
    parent = parent[key] as Record<string | number, Json>;
  }
  const last = path.at(-1)!;
  if (value !== undefined) parent[last] = value;
  else if (Array.isArray(parent)) parent.splice(last as number, 1);
  else delete parent[last];
  return copy;
}

const set = (path: Path, kind: string, value: Json | undefined): Mutation => ({
  path,
  kind,
  apply: (object) => withValue(object, path, value),
});

/** A sample value of `schema` that differs from `old` (for a new key or item, `old` is undefined). */
function sample(schema: Schema, old: Json | undefined, path: Path, caller: string): Json {
  if (schema.properties) {
    const out: Record<string, Json> = {};
    for (const [name, sub] of Object.entries(schema.properties))
      out[name] = name === 'node' ? caller : sample(sub, undefined, [...path, name], caller);
    return out;
  }
  switch (schema.type) {
    case 'integer':
      return typeof old === 'number'
        ? old + 1
        : schema.maximum !== undefined
          ? Math.min(7, schema.maximum)
          : 7;
    case 'number':
      return typeof old === 'number' ? old + 1 : 7;
    case 'boolean':
      return !old;
    case 'string':
      if (schema.format === 'date-time')
        return old === '2099-01-01T00:00:00Z' ? '2098-01-01T00:00:00Z' : '2099-01-01T00:00:00Z';
      if (path.at(-1) === 'cidr') return '10.78.9.0/26';
      return old === 'walk-x' ? 'walk-y' : 'walk-x';
    case 'array':
      return [sample(schema.items ?? {}, undefined, [...path, 0], caller)];
    case 'object':
      return { 'walk-key': sample(schema.additionalProperties as Schema, undefined, path, caller) };
    default:
      return 'walk-x';
  }
}

/** Every mutation of `value` under `schema` at `path` (the walk). */
function* walk(schema: Schema, value: Json | undefined, path: Path, caller: string): Generator<Mutation> {
  if (schema.properties) {
    const object = (value ?? {}) as Record<string, Json>;
    for (const [name, sub] of Object.entries(schema.properties)) {
      const here = [...path, name];
      if (name in object) {
        yield* walk(sub, object[name], here, caller);
        if (!schema.required?.includes(name)) yield set(here, 'remove', undefined);
      } else yield set(here, 'add', sample(sub, undefined, here, caller));
    }
    // pruned by the API server (not in the schema): no effect
    yield set([...path, 'walkUnknown'], 'add', 'walk-x');
    return;
  }
  if (schema.type === 'object' && typeof schema.additionalProperties === 'object') {
    const map = (value ?? {}) as Record<string, Json>;
    for (const key of Object.keys(map)) {
      yield* walk(schema.additionalProperties, map[key], [...path, key], caller);
      yield set([...path, key], 'remove', undefined);
    }
    const item = schema.additionalProperties;
    const key = path.at(-1) === 'allocations' ? '9' : 'walk.example/new';
    yield set([...path, key], 'add', sample(item, undefined, [...path, key], caller));
    if (item.properties?.node)
      yield set([...path, key], 'add', {
        ...(sample(item, undefined, [...path, key], caller) as object),
        node: N2,
      });
    return;
  }
  if (schema.type === 'array') {
    const list = (value ?? []) as Json[];
    for (let i = 0; i < list.length; i++) {
      yield* walk(schema.items ?? {}, list[i], [...path, i], caller);
      yield set([...path, i], 'remove', undefined);
    }
    yield set(
      [...path, list.length],
      'add',
      sample(schema.items ?? {}, undefined, [...path, list.length], caller),
    );
    return;
  }
  yield set(path, 'set', sample(schema, value, path, caller));
  if (schema.type === 'integer') yield set(path, 'unsafe', UNSAFE);
  if (schema.nullable && value !== null) yield set(path, 'null', null);
}

/** ObjectMeta's properties as the API server publishes them, with a value per property. */
function* metadataWalk(
  properties: Record<string, Schema>,
  stored: Record<string, Json>,
): Generator<Mutation> {
  const meta = (name: string): Path => ['metadata', name];
  const samples: Record<string, (old: Json | undefined) => Json[]> = {
    annotations: (old) => [{ ...((old as object) ?? {}), 'walk.example/note': 'x' }],
    creationTimestamp: () => ['2099-01-01T00:00:00Z'],
    deletionGracePeriodSeconds: () => [0, 30],
    deletionTimestamp: () => ['2026-01-01T00:00:00Z'],
    finalizers: (old) => [[...((old as string[]) ?? []), 'x.example/hold']],
    generateName: () => ['walk-'],
    generation: (old) => [(typeof old === 'number' ? old : 1) + 5],
    labels: () => [],
    managedFields: () => [
      [
        {
          manager: 'walk',
          operation: 'Update',
          apiVersion: 'ipam.blockipam.io/v1alpha1',
          time: '2026-01-01T00:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:labels': {} } },
        },
      ],
    ],
    name: () => ['10-77-200-0-26'],
    namespace: () => ['default'],
    ownerReferences: () => [
      [{ apiVersion: 'v1', kind: 'Node', name: 'x', uid: '3f2504e0-4f89-11d3-9a0c-0305e82c3301' }],
      [
        {
          apiVersion: 'v1',
          kind: 'Node',
          name: N1,
          uid: chart.uids[N1]!,
          blockOwnerDeletion: true,
          controller: true,
        },
      ],
    ],
    resourceVersion: () => ['1'],
    selfLink: () => ['/walk'],
    uid: () => ['3f2504e0-4f89-11d3-9a0c-0305e82c3302'],
  };
  for (const name of Object.keys(properties)) {
    const make = samples[name];
    assert.ok(make, `ObjectMeta has a field the walk has no value for: metadata.${name} — add one`);
    for (const value of make(stored[name])) yield set(meta(name), 'set', value);
    if (stored[name] !== undefined && name !== 'name') yield set(meta(name), 'remove', undefined);
  }
  // labels, one by one: each changed and removed, and new ones of every kind
  const labels = (stored.labels ?? {}) as Record<string, string>;
  for (const key of Object.keys(labels)) {
    yield set(['metadata', 'labels', key], 'set', labels[key] === 'affine' ? 'borrowed' : `${labels[key]}-x`);
    yield set(['metadata', 'labels', key], 'remove', undefined);
  }
  yield set(['metadata', 'labels', 'walk.example/new'], 'add', 'x');
  yield set(['metadata', 'labels', nodeLabel('walk-n3')], 'add', 'borrowed');
  yield set(['metadata', 'labels', nodeLabel('walk-n3')], 'add', 'affine');
  yield set(['metadata', 'labels', nodeLabel(N1)], 'add', 'affine');
}

/** The single-field changes a node may make (docs/design-core.md §Node writes); all else is refused. */
function allowedSingle(m: Mutation, stored: IPAMBlock, caller: string): boolean {
  const [top, field, key] = m.path;
  const labels = stored.metadata.labels ?? {};
  if (
    top === 'metadata' &&
    field === 'labels' &&
    typeof key === 'string' &&
    key.startsWith('node.ipam.blockipam.io/')
  )
    // a node label "borrowed" coming (no more of them than allocations) or going
    return (
      (m.kind === 'add' &&
        !(key in labels) &&
        at(m.apply({}), m.path) === 'borrowed' &&
        Object.values(labels).filter((v) => v === 'borrowed').length + 1 <=
          Object.keys(stored.spec.allocations).length) ||
      (m.kind === 'remove' && labels[key] === 'borrowed')
    );
  if (top === 'spec' && field === 'allocations' && typeof key === 'string' && m.path.length === 3)
    // the caller's own allocation removed (a release)
    return m.kind === 'remove' && stored.spec.allocations[key]?.node === caller;
  if (top === 'spec' && field === 'affinity' && m.path.length === 2)
    // the owner giving its block up
    return m.kind === 'null' && stored.spec.affinity === caller;
  return false;
}

/**
 * The single-field changes of a claim a node may make: the values core's claim takes from the
 * node's clock (the seed of `spec.sequence`, safe by the policy's bound, and
 * `affinityClaimTime`, which core does not trust when in the future). Everything else of a claim
 * is what core computes from its CIDR, pool and node.
 */
function allowedInClaim(m: Mutation): boolean {
  const [top, field] = m.path;
  return (
    top === 'spec' &&
    m.path.length === 2 &&
    m.kind === 'set' &&
    (field === 'sequence' || field === 'affinityClaimTime')
  );
}

describe('the per-node admission policy: every field, every verb, every node credential', () => {
  const blocks: Record<string, IPAMBlock> = {};
  let credentials: [string, string][] = [];
  /** A token of the node ServiceAccount bound to nothing: it names no node. */
  let nameless: string;
  let crdSchema: Schema;
  let objectMeta: Record<string, Schema>;
  const counts = { tried: 0, refused: 0, noEffect: 0, allowed: 0 };

  const stored = async (name: string): Promise<IPAMBlock> => {
    const r = await call(controlPlane().adminToken, 'GET', `${GROUP_PATH}/${name}`);
    assert.equal(r.status, 200, r.body);
    return JSON.parse(r.body) as IPAMBlock;
  };
  const dryRunPut = (token: string, name: string, body: string): Promise<Answer> =>
    call(token, 'PUT', `${GROUP_PATH}/${name}?dryRun=All`, body);

  before(async () => {
    chart.install(
      [N1, N2],
      [
        ['walk-agent-1', chart.nodeSA, N1],
        ['walk-agent-2', chart.nodeSA, N2],
      ],
    );
    chart.usablePool(POOL, '10.77.0.0/16');
    const made = {
      foreign: coreBlock(
        '10.77.1.0/26',
        N2,
        [
          [2, N2],
          [3, N1],
          [4, N2],
        ],
        [5, 6],
      ),
      unowned: coreBlock(
        '10.77.2.0/26',
        null,
        [
          [2, N2],
          [3, N1],
        ],
        [5, 6],
      ),
      own: coreBlock(
        '10.77.3.0/26',
        N1,
        [
          [2, N1],
          [3, N2],
          [4, N1],
        ],
        [5, 6],
      ),
      foreignEmpty: coreBlock('10.77.4.0/26', N2, [], [5]),
      unownedEmpty: coreBlock('10.77.5.0/26', null, [], [5]),
      ownEmpty: coreBlock('10.77.6.0/26', N1, [], [5]),
      ownOnlyMine: coreBlock('10.77.10.0/26', N1, [[2, N1]], [5]),
    };
    for (const [role, block] of Object.entries(made)) {
      adminOk(['create', '-f', '-'], block);
      blocks[role] = await stored(block.metadata.name);
    }
    const pluginKubeconfig = chart.nodeCredential(chart.pluginSA, N1);
    nameless = tokenOf(chart.credential(chart.nodeSA));
    credentials = [
      ['agent token', tokenOf(chart.credential(chart.nodeSA, 'walk-agent-1'))],
      ['plugin token', tokenOf(pluginKubeconfig)],
    ];
    const crd = parse(readFileSync(join(REPO, 'crds', 'ipamblocks.yaml'), 'utf8')) as {
      spec: { versions: { schema: { openAPIV3Schema: Schema } }[] };
    };
    crdSchema = crd.spec.versions[0]!.schema.openAPIV3Schema;
    const openapi = await call(
      controlPlane().adminToken,
      'GET',
      '/openapi/v3/apis/ipam.blockipam.io/v1alpha1',
    );
    assert.equal(openapi.status, 200, openapi.body);
    const schemas = (JSON.parse(openapi.body) as { components: { schemas: Record<string, Schema> } })
      .components.schemas;
    objectMeta = schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta']!.properties!;
    await policyInForce(/blockipam: node walk-n1/);
  });

  /**
   * Waits until a write breaking several of the policy's rules at once is refused with a message
   * `message` matches (whichever rule answers: a test may drop one): a policy or a change of it
   * takes a moment to take effect.
   */
  async function policyInForce(message: RegExp): Promise<void> {
    const foreign = blocks.foreign!;
    const probe = jsonText({
      ...foreign,
      metadata: { ...foreign.metadata, finalizers: ['x.example/hold'], annotations: { a: 'b' } },
      spec: {
        ...foreign.spec,
        affinity: N1,
        sequence: foreign.spec.sequence + 5,
        allocations: {},
        freed: [],
      },
    });
    for (let attempt = 1; ; attempt++) {
      const r = await dryRunPut(credentials[1]![1], foreign.metadata.name, probe);
      if (r.status >= 300 && message.test(r.body)) return;
      assert.ok(attempt < 60, `the node-blocks policy is not in force as expected: ${r.status} ${r.body}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  after(() => {
    admin(['delete', 'ipamblocks', '-l', `ipam.blockipam.io/pool=${POOL}`]);
    admin(['delete', 'ippool', POOL]);
    chart.uninstall([N1, N2]);
    console.log(
      `policy walk: ${counts.tried} UPDATE probes, ${counts.refused} refused, ${counts.noEffect} admitted without effect, ` +
        `${counts.allowed} admitted inside the allow-list`,
    );
  });

  /** Every single-field mutation of `block` the walk sends: its spec and status, then its metadata. */
  const mutationsOf = (block: IPAMBlock): Mutation[] => [
    ...walk(
      {
        ...crdSchema,
        properties: { spec: crdSchema.properties!.spec!, status: crdSchema.properties!.status! },
      },
      block as unknown as Json,
      [],
      N1,
    ),
    ...metadataWalk(objectMeta, (block.metadata ?? {}) as unknown as Record<string, Json>),
  ];

  /**
   * The single-field walk: every mutation of every path, with each credential, on each block.
   * `first`: stop at the first change admitted outside the allow-list.
   */
  async function singleFieldWalk(first = false): Promise<{ outside: string[]; refusedAllowed: string[] }> {
    const outside: string[] = [];
    const refusedAllowed: string[] = [];
    for (const role of ['foreign', 'unowned', 'own'] as const) {
      const block = blocks[role]!;
      const original = block as unknown as Json;
      const mutations = mutationsOf(block);
      for (const [who, token] of credentials) {
        for (const m of mutations) {
          counts.tried += 1;
          const what = `${who} on the ${role} block: ${m.kind} ${m.path.join('.')}`;
          const answer = await dryRunPut(token, block.metadata.name, jsonText(m.apply(original)));
          const allowed = allowedSingle(m, block, N1);
          if (answer.status >= 300) {
            counts.refused += 1;
            if (allowed) refusedAllowed.push(`${what}: ${answer.status} ${answer.body.slice(0, 300)}`);
            continue;
          }
          const after = JSON.parse(answer.body) as Record<string, unknown>;
          if (JSON.stringify(comparable(after)) === JSON.stringify(comparable(block as never))) {
            counts.noEffect += 1;
            continue;
          }
          if (allowed) counts.allowed += 1;
          else {
            outside.push(what);
            if (first) return { outside, refusedAllowed };
          }
        }
      }
    }
    return { outside, refusedAllowed };
  }

  test('every single-field change outside the allow-list is refused or has no effect', async () => {
    const { outside, refusedAllowed } = await singleFieldWalk();
    assert.deepEqual(outside, [], 'admitted outside the allow-list');
    assert.deepEqual(refusedAllowed, [], 'refused although core writes it');
    assert.ok(counts.tried > 300, `only ${counts.tried} probes`);
    // docs/security.md keeps the figures of this run: they change only with the schema or the policy
    const row = `| IPAMBlock UPDATE, 2 credentials × 3 blocks | ${counts.tried} | ${counts.refused} | ${counts.noEffect} | ${counts.allowed} | 0 |`;
    const doc = readFileSync(join(REPO, 'docs', 'security.md'), 'utf8').replace(/ {2,}/g, ' ');
    assert.ok(doc.includes(row), `docs/security.md lacks the row ${row}`);
  });

  test('every single-field change of a claim (CREATE) outside what core’s claim may vary is refused or has no effect', async () => {
    const tally = { tried: 0, refused: 0, noEffect: 0, allowed: 0 };
    const outside: string[] = [];
    const claim = newBlock({ cidr: parseCidr('10.77.9.0/26')!, pool: POOL, node: N1, nowMs: NOW });
    const original = claim as unknown as Json;
    const post = (token: string, body: string): Promise<Answer> =>
      call(token, 'POST', `${GROUP_PATH}?dryRun=All`, body);
    /** The created object without what the API server sets on every create. */
    const created = (body: string): string => {
      const object = comparable(JSON.parse(body) as Record<string, unknown>) as {
        metadata: Record<string, unknown>;
      };
      delete object.metadata.uid;
      delete object.metadata.creationTimestamp;
      return JSON.stringify(object);
    };
    const mutations = mutationsOf(claim);
    for (const [who, token] of credentials) {
      const base = await post(token, jsonText(claim));
      assert.equal(base.status, 201, `${who}: core's claim refused: ${base.body.slice(0, 300)}`);
      const baseline = created(base.body);
      for (const m of mutations) {
        tally.tried += 1;
        const answer = await post(token, jsonText(m.apply(original)));
        if (answer.status >= 300) tally.refused += 1;
        else if (created(answer.body) === baseline) tally.noEffect += 1;
        else if (allowedInClaim(m)) tally.allowed += 1;
        else outside.push(`${who}: ${m.kind} ${m.path.join('.')}`);
      }
    }
    console.log(
      `claim walk: ${tally.tried} CREATE probes, ${tally.refused} refused, ${tally.noEffect} admitted without effect, ${tally.allowed} admitted inside the allow-list`,
    );
    assert.deepEqual(outside, [], 'admitted outside what a claim may vary');
    assert.ok(tally.tried > 60, `only ${tally.tried} probes`);
    const row = `| IPAMBlock CREATE (a claim), 2 credentials | ${tally.tried} | ${tally.refused} | ${tally.noEffect} | ${tally.allowed} | 0 |`;
    const doc = readFileSync(join(REPO, 'docs', 'security.md'), 'utf8').replace(/ {2,}/g, ' ');
    assert.ok(doc.includes(row), `docs/security.md lacks the row ${row}`);
  });

  test('core’s own writes are admitted: allocate, release, borrow, both in one batched write, a claim, an empty block deleted', async () => {
    const refusedWrites: string[] = [];
    const mine = (ordinal: number): Parameters<typeof allocateOrdinal>[2] => ({
      handle: `walk.new.${ordinal}`,
      node: N1,
      namespace: 'default',
      pod: `new-${ordinal}`,
    });
    for (const role of ['foreign', 'unowned', 'own'] as const) {
      const block = blocks[role]!;
      const caller = Object.entries(block.spec.allocations).find(([, a]) => a.node === N1)!;
      const allocated = allocateOrdinal(block, 10, mine(10), Date.now())!.block;
      const writes: [string, IPAMBlock][] = [
        ['allocate a never-used ordinal', allocated],
        ['allocate a freed ordinal (its entry goes)', allocateOrdinal(block, 5, mine(5), Date.now())!.block],
        ['release its own allocation', releaseHandle(block, caller[1].handle, {}, Date.now()).block],
        [
          'allocate two and release one of them and an old one in one write',
          releaseHandle(
            releaseHandle(
              allocateOrdinal(allocated, 11, mine(11), Date.now())!.block,
              'walk.new.10',
              {},
              Date.now(),
            ).block,
            caller[1].handle,
            {},
            Date.now(),
          ).block,
        ],
        [
          'allocate a freed ordinal and release it again in one write',
          releaseHandle(allocateOrdinal(block, 6, mine(6), Date.now())!.block, 'walk.new.6', {}, Date.now())
            .block,
        ],
      ];
      for (const [who, token] of credentials)
        for (const [what, write] of writes) {
          const r = await dryRunPut(token, block.metadata.name, jsonText(write));
          if (r.status !== 200)
            refusedWrites.push(`${who}, ${role} block: ${what}: ${r.status} ${r.body.slice(0, 400)}`);
        }
    }
    for (const [who, token] of credentials) {
      for (const role of ['unownedEmpty', 'ownEmpty'] as const) {
        const r = await call(token, 'DELETE', `${GROUP_PATH}/${blocks[role]!.metadata.name}?dryRun=All`);
        if (r.status !== 200)
          refusedWrites.push(`${who}: delete the ${role} block: ${r.status} ${r.body.slice(0, 300)}`);
      }
      const claim = newBlock({ cidr: parseCidr('10.77.7.0/26')!, pool: POOL, node: N1, nowMs: Date.now() });
      const r = await call(token, 'POST', `${GROUP_PATH}?dryRun=All`, jsonText(claim));
      if (r.status !== 201) refusedWrites.push(`${who}: claim: ${r.status} ${r.body.slice(0, 300)}`);
    }
    assert.deepEqual(refusedWrites, []);
  });

  /**
   * Every other verb and shape of write, core-shaped writes but for one thing core never does, and
   * a token that names no node: what of it was admitted.
   */
  async function attackProbes(): Promise<string[]> {
    const admittedAttacks: string[] = [];
    const foreign = blocks.foreign!.metadata.name;
    const ownerRef = {
      apiVersion: 'v1',
      kind: 'Node',
      name: 'x',
      uid: '3f2504e0-4f89-11d3-9a0c-0305e82c3301',
    };
    const claim = newBlock({ cidr: parseCidr('10.77.8.0/26')!, pool: POOL, node: N1, nowMs: Date.now() });
    const attacks: [string, string, string, string?, string?][] = [
      [
        'merge patch: ownerReferences',
        'PATCH',
        `${GROUP_PATH}/${foreign}?dryRun=All`,
        JSON.stringify({ metadata: { ownerReferences: [ownerRef] } }),
        'application/merge-patch+json',
      ],
      [
        'JSON patch: a finalizer',
        'PATCH',
        `${GROUP_PATH}/${foreign}?dryRun=All`,
        JSON.stringify([{ op: 'add', path: '/metadata/finalizers', value: ['x.example/hold'] }]),
        'application/json-patch+json',
      ],
      [
        'JSON patch: sequence 2^53+1',
        'PATCH',
        `${GROUP_PATH}/${foreign}?dryRun=All`,
        `[{"op":"replace","path":"/spec/sequence","value":${UNSAFE_TEXT}}]`,
        'application/json-patch+json',
      ],
      [
        'server-side apply: an annotation',
        'PATCH',
        `${GROUP_PATH}/${foreign}?dryRun=All&fieldManager=walk&force=true`,
        JSON.stringify({
          apiVersion: 'ipam.blockipam.io/v1alpha1',
          kind: 'IPAMBlock',
          metadata: { name: foreign, annotations: { 'walk.example/x': 'y' } },
        }),
        'application/apply-patch+yaml',
      ],
      [
        'strategic merge patch',
        'PATCH',
        `${GROUP_PATH}/${foreign}?dryRun=All`,
        JSON.stringify({ metadata: { finalizers: ['x.example/hold'] } }),
        'application/strategic-merge-patch+json',
      ],
      ['delete a non-empty foreign block', 'DELETE', `${GROUP_PATH}/${foreign}?dryRun=All`],
      [
        'delete a non-empty unowned block',
        'DELETE',
        `${GROUP_PATH}/${blocks.unowned!.metadata.name}?dryRun=All`,
      ],
      ['delete its own non-empty block', 'DELETE', `${GROUP_PATH}/${blocks.own!.metadata.name}?dryRun=All`],
      [
        'delete its own block holding only its own allocation',
        'DELETE',
        `${GROUP_PATH}/${blocks.ownOnlyMine!.metadata.name}?dryRun=All`,
      ],
      [
        'delete another node’s empty block',
        'DELETE',
        `${GROUP_PATH}/${blocks.foreignEmpty!.metadata.name}?dryRun=All`,
      ],
      ['deletecollection', 'DELETE', `${GROUP_PATH}?dryRun=All`],
      ['status update', 'PUT', `${GROUP_PATH}/${foreign}/status?dryRun=All`, JSON.stringify(blocks.foreign)],
      [
        'claim with an annotation',
        'POST',
        `${GROUP_PATH}?dryRun=All`,
        JSON.stringify({ ...claim, metadata: { ...claim.metadata, annotations: { a: 'b' } } }),
      ],
      [
        'claim with a finalizer',
        'POST',
        `${GROUP_PATH}?dryRun=All`,
        JSON.stringify({ ...claim, metadata: { ...claim.metadata, finalizers: ['x.example/hold'] } }),
      ],
      [
        'claim with an ownerReference',
        'POST',
        `${GROUP_PATH}?dryRun=All`,
        JSON.stringify({ ...claim, metadata: { ...claim.metadata, ownerReferences: [ownerRef] } }),
      ],
      [
        'claim with a sequence above 2^52',
        'POST',
        `${GROUP_PATH}?dryRun=All`,
        JSON.stringify({ ...claim, spec: { ...claim.spec, sequence: 2 ** 52 + 2 } }),
      ],
      [
        'claim with a sequence of 2^53+1',
        'POST',
        `${GROUP_PATH}?dryRun=All`,
        jsonText({ ...claim, spec: { ...claim.spec, sequence: UNSAFE } }),
      ],
    ];
    // core-shaped writes but for one thing core never does (a reviewer's probes): an allocation at
    // an ordinal outside the block or reserved (every agent would route that /32 to the caller),
    // a freed entry of such an ordinal, an entry re-dated earlier, the kept entries reordered
    const stored = blocks.foreign!;
    const at = (key: string): IPAMBlock => {
      const b = allocateOrdinal(stored, 10, { handle: `walk.evil.${key}`, node: N1 }, Date.now())!.block;
      const { ['10']: moved, ...rest } = b.spec.allocations;
      return { ...b, spec: { ...b.spec, allocations: { ...rest, [key]: moved! } } };
    };
    const freedAt = (ordinal: number): IPAMBlock => ({
      ...stored,
      spec: {
        ...stored.spec,
        sequence: stored.spec.sequence + 1,
        freed: [
          ...stored.spec.freed,
          { ordinal, releasedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z') },
        ],
      },
    });
    const [first, ...others] = stored.spec.freed;
    const borrowedLabels = Object.fromEntries(
      [1, 2, 3, 4].map((i) => [`node.ipam.blockipam.io/walk-label-${i}`, 'borrowed']),
    );
    const shapes: [string, IPAMBlock][] = [
      ...['100', '4095', '0', '1', '63'].map((key): [string, IPAMBlock] => [
        `an allocation at ordinal ${key}`,
        at(key),
      ]),
      ...[64, 4000, 0, 1, 63].map((o): [string, IPAMBlock] => [`a freed entry of ordinal ${o}`, freedAt(o)]),
      [
        'a freed entry re-dated 1970 (with the sequence a batch would use)',
        {
          ...stored,
          spec: {
            ...stored.spec,
            sequence: stored.spec.sequence + 1,
            freed: [...others, { ordinal: first!.ordinal, releasedAt: '1970-01-01T00:00:00Z' }],
          },
        },
      ],
      [
        'four node labels "borrowed" more than its 3 allocations (every reader pays for them)',
        {
          ...stored,
          metadata: { ...stored.metadata, labels: { ...stored.metadata.labels, ...borrowedLabels } },
        },
      ],
      ...['2026-12-05t06:00:00z', '2026-12-05T06:00:00:5Z', '2026-12-05T07:00:00+01:00'].map(
        (date): [string, IPAMBlock] => [
          `a freed entry dated ${date} (a format the policy's timestamp() cannot read)`,
          {
            ...stored,
            spec: {
              ...stored.spec,
              sequence: stored.spec.sequence + 1,
              freed: [...stored.spec.freed, { ordinal: 40, releasedAt: date }],
            },
          },
        ],
      ),
      [
        'the freed list reversed',
        { ...stored, spec: { ...stored.spec, freed: [...stored.spec.freed].reverse() } },
      ],
    ];
    for (const [what, body] of shapes)
      attacks.push([what, 'PUT', `${GROUP_PATH}/${stored.metadata.name}?dryRun=All`, jsonText(body)]);
    for (const [who, token] of credentials)
      for (const [what, method, path, body, type] of attacks) {
        const r = await call(token, method, path, body, type);
        if (r.status < 300) admittedAttacks.push(`${who}: ${what}: ${r.status}`);
      }
    // a token that names no node (a TokenRequest of the node ServiceAccount bound to nothing):
    // not even core's own writes
    for (const role of ['unownedEmpty', 'ownEmpty'] as const) {
      const r = await call(nameless, 'DELETE', `${GROUP_PATH}/${blocks[role]!.metadata.name}?dryRun=All`);
      if (r.status < 300) admittedAttacks.push(`a nameless token: delete the ${role} block: ${r.status}`);
    }
    const unclaimed = newBlock({
      cidr: parseCidr('10.77.9.0/26')!,
      pool: POOL,
      node: null,
      nowMs: Date.now(),
    });
    const r = await call(nameless, 'POST', `${GROUP_PATH}?dryRun=All`, jsonText(unclaimed));
    if (r.status < 300) admittedAttacks.push(`a nameless token: an unowned claim: ${r.status}`);
    return admittedAttacks;
  }

  test('the largest block (/20: 4,093 assignable ordinals), all freed or all allocated: core’s writes stay within the policy’s cost budget', async () => {
    const assignable = Array.from({ length: 4093 }, (_, i) => i + 2);
    const allFreed = coreBlock('10.78.0.0/20', N1, [], assignable.slice(0, -1));
    const full = coreBlock(
      '10.78.16.0/20',
      N1,
      assignable.map((o): [number, string] => [o, N1]),
      [],
    );
    const refusedWrites: string[] = [];
    try {
      for (const block of [allFreed, full]) adminOk(['create', '-f', '-'], block);
      const [freedStored, fullStored] = [
        await stored(allFreed.metadata.name),
        await stored(full.metadata.name),
      ];
      assert.equal(freedStored.spec.freed.length, 4092);
      assert.equal(Object.keys(fullStored.spec.allocations).length, 4093);
      const mine = { handle: 'walk.large', node: N1, namespace: 'default', pod: 'large' };
      const writes: [string, IPAMBlock][] = [
        ['allocate the one never-used ordinal', allocateOrdinal(freedStored, 4094, mine, Date.now())!.block],
        ['allocate a freed ordinal', allocateOrdinal(freedStored, 2000, mine, Date.now())!.block],
        [
          'release one of 4,093 allocations',
          releaseHandle(fullStored, fullStored.spec.allocations['2000']!.handle, {}, Date.now()).block,
        ],
      ];
      for (const [who, token] of credentials)
        for (const [what, write] of writes) {
          const r = await dryRunPut(token, write.metadata.name, jsonText(write));
          if (r.status !== 200) refusedWrites.push(`${who}: ${what}: ${r.status} ${r.body.slice(0, 400)}`);
        }
    } finally {
      admin(['delete', 'ipamblocks', allFreed.metadata.name, full.metadata.name]);
    }
    assert.deepEqual(refusedWrites, []);
  });

  test('every other verb and shape of write is refused: PATCH of each kind, foreign DELETE, deletecollection, status, a claim with foreign metadata, a token naming no node', async () => {
    assert.deepEqual(await attackProbes(), []);
  });

  test('TokenRequest, the node ServiceAccount’s other write: every spec field probed, only its own Node', async () => {
    const token = credentials[0]![1];
    const path = (sa: string): string => `/api/v1/namespaces/${NS}/serviceaccounts/${sa}/token`;
    const base = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: [] as string[],
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Node', name: N1, uid: chart.uids[N1]! },
      },
    };
    const good = await call(token, 'POST', path(chart.pluginSA), JSON.stringify(base));
    assert.equal(good.status, 201, good.body);
    const openapi = await call(controlPlane().adminToken, 'GET', '/openapi/v3/api/v1');
    const schemas = (JSON.parse(openapi.body) as { components: { schemas: Record<string, Schema> } })
      .components.schemas;
    const specFields = Object.keys(schemas['io.k8s.api.authentication.v1.TokenRequestSpec']!.properties!);
    const refFields = Object.keys(schemas['io.k8s.api.authentication.v1.BoundObjectReference']!.properties!);
    // what changing each field to another value does: allowed (the token stays bound to its own Node) or not
    const values: Record<string, [unknown, boolean][]> = {
      // the caller's: the API server defaults them before admission, so no rule can pin them
      audiences: [[['walk'], true]],
      attestations: [[{ 'kubernetes.io/walk': ['x'] }, false]],
      // at most the chart's agent.tokenExpirationSeconds (3600)
      expirationSeconds: [
        [7200, false],
        [315_360_000, false],
        [600, true],
      ],
      boundObjectRef: [[undefined, false]],
      'boundObjectRef.apiVersion': [['v2', false]],
      'boundObjectRef.kind': [
        ['Pod', false],
        ['Secret', false],
      ],
      'boundObjectRef.name': [
        [N2, false],
        ['', false],
      ],
      'boundObjectRef.uid': [
        [chart.uids[N2], false],
        ['3f2504e0-4f89-11d3-9a0c-0305e82c3301', false],
      ],
    };
    const probes: [string, unknown, boolean][] = [];
    for (const field of [...specFields, ...refFields.map((f) => `boundObjectRef.${f}`)]) {
      const given = values[field];
      assert.ok(given, `TokenRequest has a field the walk has no value for: spec.${field} — add one`);
      for (const [value, ok] of given) probes.push([field, value, ok]);
    }
    const admittedOutside: string[] = [];
    const refusedAllowed: string[] = [];
    for (const [field, value, ok] of probes) {
      const body = withValue(base, ['spec', ...field.split('.')], value as Json | undefined);
      const r = await call(token, 'POST', path(chart.pluginSA), JSON.stringify(body));
      if (r.status < 300 && !ok) admittedOutside.push(`spec.${field} = ${JSON.stringify(value)}`);
      if (r.status >= 300 && ok)
        refusedAllowed.push(`spec.${field} = ${JSON.stringify(value)}: ${r.body.slice(0, 300)}`);
    }
    for (const sa of [chart.nodeSA, chart.controllerSA, 'default']) {
      const r = await call(token, 'POST', path(sa), JSON.stringify(base));
      if (r.status < 300) admittedOutside.push(`a token of ServiceAccount ${sa}`);
    }
    console.log(
      `token walk: ${probes.length + 3} TokenRequests, ${admittedOutside.length} admitted outside the rule`,
    );
    assert.deepEqual(admittedOutside, []);
    assert.deepEqual(refusedAllowed, []);
  });

  test('each validation of the policy dropped in turn: the probes above find a write it alone refused', async () => {
    interface Validation {
      expression: string;
      message?: string;
      messageExpression?: string;
    }
    interface Policy {
      metadata: { name: string; labels?: Record<string, string> };
      spec: { validations: Validation[] };
    }
    const policies = JSON.parse(adminOk(['get', 'validatingadmissionpolicies', '-o', 'json'])) as {
      items: Policy[];
    };
    const policy = policies.items.find(
      (p) =>
        p.metadata.name.endsWith('-node-blocks') &&
        p.metadata.labels?.['app.kubernetes.io/instance'] === RELEASE,
    );
    assert.ok(policy, 'the chart installed the node-blocks policy');
    const replace = (validations: Validation[]): void => {
      adminOk(['replace', '-f', '-'], {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name: policy.metadata.name, labels: policy.metadata.labels },
        spec: { ...policy.spec, validations },
      });
    };
    const kept = { ...counts };
    const undetected: string[] = [];
    const found: string[] = [];
    try {
      for (const [i, dropped] of policy.spec.validations.entries()) {
        // every message the changed policy gives names it: its refusals say when it is in force
        const marker = `policy without validation ${i}: `;
        replace(
          policy.spec.validations
            .filter((v) => v !== dropped)
            .map((v) =>
              v.messageExpression === undefined
                ? { ...v, message: `${marker}${v.message ?? ''}` }
                : { ...v, messageExpression: `'${marker}' + (${v.messageExpression})` },
            ),
        );
        await policyInForce(new RegExp(marker));
        const admitted = await attackProbes();
        if (admitted.length === 0) admitted.push(...(await singleFieldWalk(true)).outside);
        const what = `validation ${i} (${dropped.expression.replace(/\s+/g, ' ').slice(0, 60)}…)`;
        if (admitted.length === 0) undetected.push(what);
        else found.push(`${what}: ${admitted[0]!}`);
      }
    } finally {
      replace(policy.spec.validations);
      Object.assign(counts, kept);
    }
    await policyInForce(/^(?![\s\S]*policy without validation)[\s\S]*blockipam: node walk-n1/);
    console.log(`each validation dropped in turn, the first write admitted:\n  ${found.join('\n  ')}`);
    assert.deepEqual(undetected, [], 'validations whose removal no probe notices');
    assert.equal(found.length, policy.spec.validations.length);
  });
});
