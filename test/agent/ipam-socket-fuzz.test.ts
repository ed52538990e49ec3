/**
 * Bad input on the agent's IPAM socket, counted (docs/security.md §Bad input: the agent's socket):
 * fast-check sends the real server (block-controller/agent/ipam/server.ts, wire v3) over core's
 * node IPAM service on a MemoryDatastore bytes that are no request (not a v3 header, cut short,
 * sizes over their bounds), or valid calls of each command with 1 to 3 fields — its CNI_*
 * variables or the netconf in its stdin — replaced by a hostile value (wrong types, NUL and lone
 * surrogates, prototype keys, 100,000-character strings, 1e999, deep nesting). Every input must
 * get exactly one answer: NOT_SERVED, or READY and a RESULT whose stdout is empty or one JSON
 * document (a CNI error document whenever the exit code is not 0); the server keeps serving; no
 * allocation is left (a successful ADD is DELed with the same call). Prints the outcomes by
 * category.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import fc from 'fast-check';
import { InvalidError, MemoryDatastore, type IPAMBlock } from 'blockipam/core';
import { createNodeIpam, datastoreInputs } from 'blockipam/core/node-ipam';
import { MAX_STDIN_BYTES } from 'blockipam/core/node-ipam';
import { startIpamServer } from '../../block-controller/agent/ipam/server.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import { askSocket, frameRequest } from '../helpers/ipam-socket.ts';
import type { SocketAnswer } from '../helpers/ipam-socket.ts';
import { quietLog } from './fixtures.ts';

/** Fixed, so a failure reproduces; change it (and docs/security.md) to explore further. */
const SEED = 20_261_203;
/** Fuzzed requests (with the DELs after successful ADDs, a few more connections). */
const RUNS = 1_000;
const NODE = 'n1';

const dir = mkdtempSync(join(tmpdir(), 'bipam-sockfuzz-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The handle limit crds/ipamblocks.yaml puts on an allocation: a 422, as the API server's. */
function checkBlock(block: IPAMBlock): void {
  for (const a of Object.values(block.spec.allocations))
    if (a.handle.length > 512)
      throw new InvalidError(`IPAMBlock "${block.metadata.name}" is invalid: handle: Too long`);
}

function datastore(): MemoryDatastore {
  const ds = new MemoryDatastore({
    pools: [
      {
        apiVersion: 'ipam.blockipam.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name: 'auto', creationTimestamp: '2026-01-01T00:00:00Z' },
        spec: { cidr: '10.50.0.0/16', blockSize: 26 },
      },
    ],
    nodes: [{ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } }],
  });
  const [create, update] = [ds.blocks.create.bind(ds.blocks), ds.blocks.update.bind(ds.blocks)];
  ds.blocks.create = async (b, o) => (checkBlock(b), create(b, o));
  ds.blocks.update = async (b, o) => (checkBlock(b), update(b, o));
  return ds;
}

/** Text spliced into the request's JSON verbatim (a value JSON cannot hold: 1e999, 100,000 deep). */
class Raw {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

const hostileString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    '\u0000',
    '\ud800',
    '__proto__',
    'constructor',
    'a'.repeat(100_000),
    '../../etc/passwd',
    '%s%n${x}',
    NODE.toUpperCase(),
    `${NODE}\u0000`,
    '10.50.0.1',
    'fd00::1',
  ),
);
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(
    new Raw('1e999'),
    new Raw('-0'),
    new Raw(`${'['.repeat(100_000)}${']'.repeat(100_000)}`),
    new Raw('{"__proto__":{"polluted":1}}'),
    new Raw('{"a":1,"a":2}'),
    0,
    -1,
    2 ** 53,
    true,
    null,
    [],
    {},
    [4, 6, 5],
  ),
);

type Command = 'ADD' | 'DEL' | 'CHECK' | 'GC' | 'STATUS';
const attachmentEnv = {
  CNI_CONTAINERID: 'ctr1',
  CNI_NETNS: '/var/run/netns/ctr1',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
};
const netconf = (cniVersion = '1.0.0'): Record<string, unknown> => ({
  cniVersion,
  name: 'net1',
  type: 'ptp',
  ipam: { type: 'blockipam', nodeName: NODE, timeoutMs: 5_000 },
});
/** A valid call of each command: the request with the netconf as an object (stdin once stringified). */
const base: Readonly<Record<Command, Record<string, unknown>>> = {
  ADD: { env: { CNI_COMMAND: 'ADD', ...attachmentEnv }, stdin: netconf() },
  DEL: { env: { CNI_COMMAND: 'DEL', ...attachmentEnv }, stdin: netconf() },
  CHECK: {
    env: { CNI_COMMAND: 'CHECK', ...attachmentEnv },
    stdin: { ...netconf(), prevResult: { ips: [{ address: '10.50.0.2/26' }] } },
  },
  GC: {
    env: { CNI_COMMAND: 'GC' },
    stdin: { ...netconf('1.1.0'), 'cni.dev/valid-attachments': [{ containerID: 'c2', ifname: 'eth0' }] },
  },
  STATUS: { env: { CNI_COMMAND: 'STATUS' }, stdin: netconf('1.1.0') },
};
/** Fields a mutation may replace, as paths in the request (`stdin.` paths: in its netconf). */
const fields: Readonly<Record<Command, readonly string[]>> = {
  ADD: [
    'env.CNI_CONTAINERID',
    'env.CNI_IFNAME',
    'env.CNI_ARGS',
    'stdin.ipam.ipv4Pools',
    'stdin.ipam.assignIPv6',
    'stdin.runtimeConfig.ips',
    'stdin.runtimeConfig.io.kubernetes.cri.pod-annotations',
    'stdin.args.cni.ips',
  ],
  DEL: ['env.CNI_CONTAINERID', 'env.CNI_IFNAME', 'env.CNI_ARGS'],
  CHECK: ['stdin.prevResult', 'stdin.prevResult.ips'],
  GC: ['stdin.cni.dev/valid-attachments'],
  STATUS: ['stdin.ipam.ipv6Pools'],
};
const common = [
  'stdin',
  'env.CNI_COMMAND',
  'env.CNI_PATH',
  'stdin.cniVersion',
  'stdin.name',
  'stdin.ipam',
  'stdin.ipam.nodeName',
  'stdin.ipam.timeoutMs',
  'stdin.__proto__',
];

interface Input {
  readonly category: string;
  readonly payload: Buffer;
}

/** Sets (own property, so `__proto__` is a key) the value at `path` of `doc`. */
function setPath(doc: Record<string, unknown>, path: string, value: unknown): void {
  const literal = ['io.kubernetes.cri.pod-annotations', 'cni.dev/valid-attachments'].find((k) =>
    path.endsWith(k),
  );
  const keys = literal ? [...path.slice(0, -literal.length - 1).split('.'), literal] : path.split('.');
  let at: unknown = doc;
  for (const key of keys.slice(0, -1)) {
    const obj = at as Record<string, unknown>;
    const next = Object.hasOwn(obj, key) ? obj[key] : undefined;
    const copy = Array.isArray(next)
      ? [...(next as unknown[])]
      : typeof next === 'object' && next
        ? { ...next }
        : {};
    Object.defineProperty(obj, key, { value: copy, enumerable: true, writable: true, configurable: true });
    at = copy;
  }
  Object.defineProperty(at, keys.at(-1) as string, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

function stringify(doc: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(doc, (_k, v: unknown) =>
    v instanceof Raw ? `@@raw${raws.push(v.text) - 1}@@` : v,
  );
  return text.replace(/"@@raw(\d+)@@"/g, (_m, n: string) => raws[Number(n)] as string);
}

const commandArb = fc.constantFrom<Command>('ADD', 'ADD', 'DEL', 'CHECK', 'GC', 'STATUS');
const mutated: fc.Arbitrary<Input> = commandArb.chain((command) =>
  fc
    .array(fc.tuple(fc.constantFrom(...common, ...fields[command]), hostileValue), {
      minLength: 1,
      maxLength: 3,
    })
    .map((mutations) => {
      const doc = structuredClone(base[command]);
      // netconf fields first, then the request's own (a replaced `stdin` replaces the whole text)
      for (const [path, value] of mutations)
        if (path.startsWith('stdin.')) setPath(doc.stdin as Record<string, unknown>, path.slice(6), value);
      doc.stdin = stringify(doc.stdin);
      for (const [path, value] of mutations) if (!path.startsWith('stdin.')) setPath(doc, path, value);
      // an env value is a string on the wire: anything else goes as its JSON text
      const env = Object.fromEntries(
        Object.entries(doc.env as Record<string, unknown>).map(([k, v]) => [
          k,
          typeof v === 'string' ? v : stringify(v),
        ]),
      );
      const stdin = typeof doc.stdin === 'string' ? doc.stdin : stringify(doc.stdin);
      return { category: `${command}, fields replaced`, payload: frameRequest({ env, stdin }) };
    }),
);
const inputArb: fc.Arbitrary<Input> = fc.oneof(
  { weight: 14, arbitrary: mutated },
  {
    weight: 2,
    arbitrary: fc
      .oneof(fc.string({ unit: 'binary', maxLength: 60 }), fc.constantFrom('', '{', '{"v":2}\n', 'null'))
      .map((t) => ({ category: 'not a v3 request', payload: Buffer.from(t) })),
  },
  {
    weight: 1,
    arbitrary: fc
      .uint8Array({ maxLength: 64 })
      .map((b) => ({ category: 'raw bytes', payload: Buffer.from(b) })),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.nat(1 << 17), fc.nat(MAX_STDIN_BYTES + 4096)).map(([e, n]) => {
      const head = frameRequest({ env: {}, stdin: '' });
      head.writeUint32BE(e, 9);
      head.writeUint32BE(n, 13);
      return { category: 'sizes, no body', payload: head };
    }),
  },
);

/** Every allocation's handle, sorted. */
async function allocations(ds: MemoryDatastore): Promise<string[]> {
  return (await ds.blocks.list())
    .flatMap((b) => Object.values(b.spec.allocations).map((a) => a.handle))
    .sort();
}

it(`${RUNS} hostile requests on the socket: one well-formed answer each, nothing left allocated`, async (t) => {
  const ds = datastore();
  const ipam = createNodeIpam({ ds, inputs: datastoreInputs(ds) });
  const path = join(dir, 'ipam.sock');
  const server = await startIpamServer({
    path,
    node: NODE,
    ipam: () => ipam,
    serves: () => undefined,
    // a request cut short is NOT_SERVED at once (the server waits for its rest until then)
    readDeadlineMs: 20,
    log: quietLog,
    metrics: createAgentMetrics(),
  });
  const counts = new Map<string, Map<string, number>>();
  const count = (category: string, outcome: string): void => {
    const row = counts.get(category) ?? new Map<string, number>();
    row.set(outcome, (row.get(outcome) ?? 0) + 1);
    counts.set(category, row);
  };
  let connections = 0;
  try {
    await fc.assert(
      fc.asyncProperty(inputArb, async (input) => {
        const answer: SocketAnswer = await askSocket(path, input.payload);
        connections += 1;
        if (answer.notServed !== undefined) {
          count(input.category, `not served: ${answer.notServed.split(':')[0] ?? ''}`);
          assert.deepEqual(await allocations(ds), [], 'nothing left allocated');
          return;
        }
        assert.equal(
          typeof answer.code,
          'number',
          `RESULT or NOT_SERVED: ${JSON.stringify(answer).slice(0, 300)}`,
        );
        const stdout = answer.stdout ?? '';
        const out = stdout === '' ? undefined : (JSON.parse(stdout) as Record<string, unknown>);
        assert.ok(stdout === '' || stdout.indexOf('\n') === stdout.length - 1, 'one document');
        if (answer.code !== 0) assert.equal(typeof out?.code, 'number', `a CNI error document: ${stdout}`);
        const command = /CNI_COMMAND=(\w+)\0/.exec(input.payload.toString('latin1'))?.[1];
        count(input.category, answer.code === 0 ? `ok ${String(command)}` : `CNI ${String(out?.code)}`);
        if (command === 'ADD' && answer.code === 0) {
          const del = Buffer.from(
            input.payload.toString('latin1').replace('CNI_COMMAND=ADD\0', 'CNI_COMMAND=DEL\0'),
            'latin1',
          );
          const released = await askSocket(path, del);
          connections += 1;
          assert.equal(released.code, 0, JSON.stringify(released));
        }
        assert.deepEqual(await allocations(ds), [], 'nothing left allocated');
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    const status = {
      env: base.STATUS.env as Record<string, string>,
      stdin: JSON.stringify(base.STATUS.stdin),
    };
    assert.deepEqual(await askSocket(path, status), { code: 0, stdout: '', stderr: '' });
  } finally {
    await server.close(1_000);
  }
  t.diagnostic(`${RUNS} inputs, ${connections} connections`);
  for (const [category, row] of [...counts].sort()) {
    const total = [...row.values()].reduce((a, b) => a + b, 0);
    const parts = [...row].sort((a, b) => b[1] - a[1]).map(([o, n]) => `${o} ${n}`);
    t.diagnostic(`| ${category} | ${total} | ${parts.join(', ')} |`);
  }
});
