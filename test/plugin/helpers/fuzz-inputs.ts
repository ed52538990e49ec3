/**
 * Hostile inputs for the plugin's fuzz run (test/plugin/fuzz.test.ts): a valid invocation of a
 * command, then up to three mutations, each replacing one field (a CNI_* variable, a netconf
 * field, a runtimeConfig capability, a pod or namespace annotation) with a malformed,
 * oversized, mistyped or hostile value. Every value is plain data, so fast-check prints a
 * failing case as it was generated. {@link Raw} stands for JSON text spliced in verbatim
 * (numbers JSON.stringify cannot write, `__proto__` keys, deep nesting).
 */
import fc from 'fast-check';

/** JSON text spliced into the netconf as is. */
export class Raw {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** Every field a mutation can replace; `a.b` is a path into the netconf. */
export const envFields = [
  'CNI_COMMAND',
  'CNI_CONTAINERID',
  'CNI_NETNS',
  'CNI_IFNAME',
  'CNI_PATH',
  'CNI_ARGS',
] as const;
const numberFields = ['ipam.timeoutMs', 'ipam.lockTimeoutMs'] as const;
const pathFields = [
  'ipam.kubeconfig',
  'ipam.logFile',
  'ipam.cacheDir',
  'ipam.lockFile',
  // the agent's socket: a path in the run's directory holds no socket (connect() fails: the
  // direct path), a long one is over the 107 bytes of sun_path
  'ipam.agentSocket',
];

export interface Mutation {
  readonly field: string;
  /** undefined: the field is removed (an unset variable, an absent key). */
  readonly value: unknown;
}

export interface Case {
  readonly command: string;
  readonly cniVersion: string;
  /** CNI_ARGS names pod ns1/p1, so its annotations and its namespace's are read. */
  readonly withPod: boolean;
  readonly mutations: readonly Mutation[];
}

const big = 'a'.repeat(100_000);
const deep = (n: number): Raw => new Raw(`${'['.repeat(n)}${']'.repeat(n)}`);

/** Strings that have broken parsers: NUL, controls, prototype keys, lone surrogates, huge ones. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\0',
    'a\0b',
    'eth0\0',
    '\u0001\u001b[2J\u007f',
    '\n',
    'x\r\ny',
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    '\uD800',
    '\uDFFFx',
    '\uFEFF',
    '\uFFFD\uFFFD',
    'é',
    '💥',
    '.',
    '..',
    '-x',
    'A'.repeat(64),
    big,
    '${HOME}',
    '%s%n',
    '{"a":1}',
    '[]',
    'null',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 40 }),
);

/** Addresses and CIDRs that are odd, out of range or of the wrong family. */
export const address: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '10.50.0.5',
    '10.50.0.5/24',
    '10.50.0.5/33',
    '10.50.0.5/-1',
    '10.50.0.5/08',
    '10.50.0.0/16',
    '10.50.0.0',
    '10.50.0.1',
    '10.60.7.7',
    '10.99.0.1',
    '0.0.0.0',
    '255.255.255.255',
    '10.050.0.5',
    '010.50.0.5',
    '10.50.5',
    '167903237',
    '0xa320005',
    '10.50.0.5 ',
    '١٠.50.0.5',
    'fd00:50::5',
    'FD00:50::5',
    'fd00:50::5/129',
    'fd00:50::5/64',
    'fe80::1%eth0',
    '::ffff:10.50.0.5',
    '::10.50.0.5',
    '::',
    '::1',
    '[fd00:50::5]',
    'fd00::1::2',
    'fd00:50:0:0:0:0:0:0:5',
  ),
  fc.ipV4(),
  fc.ipV4Extended(),
  fc.ipV6(),
  hostileString,
);

const poolRef = fc.oneof(
  fc.constantFrom(
    'auto',
    'auto6',
    'manual',
    'missing',
    'AUTO',
    '10.50.0.0/16',
    '10.60.0.0/16',
    'fd00:50::/48',
    '10.50.0.0/15',
    '10.50.0.0/33',
    '10.50.0.1/16',
  ),
  hostileString,
);

const numbers = fc.constantFrom<unknown>(
  -1,
  0,
  99,
  600_001,
  1.5,
  -0.5,
  1e308,
  2 ** 53 + 2,
  '100',
  true,
  null,
  [],
  {},
  new Raw('1e999'),
  new Raw('-1e999'),
  new Raw('123456789012345678901234567890'),
  new Raw('1E-400'),
);

/** Any JSON value of the wrong shape: hostile strings and numbers, arrays, objects, nesting. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  numbers,
  fc.constantFrom<unknown>(
    null,
    false,
    new Raw('{"__proto__":{"polluted":"yes"}}'),
    new Raw('{"constructor":{"prototype":{"polluted":"yes"}}}'),
    new Raw('{"a":1,"a":2}'),
    deep(1_000),
    deep(100_000),
  ),
  fc.jsonValue({ maxDepth: 3 }),
);

const list = <T>(item: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 3, arbitrary: fc.array(item, { maxLength: 3 }) }, { weight: 1, arbitrary: anyJson });

/** An annotation value: a JSON list of `item` (the well-formed shape), or any other text. */
const annotation = (item: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.array(item, { maxLength: 3 }).map((a) => JSON.stringify(a)) },
    { weight: 1, arbitrary: hostileString },
    { weight: 1, arbitrary: anyJson.map((v) => (v instanceof Raw ? v.text : (JSON.stringify(v) ?? ''))) },
  );

/** A JSON object as text, keys in order (duplicates and `__proto__` kept). */
const objectText = (entries: readonly (readonly [string, unknown])[]): Raw =>
  new Raw(
    `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v instanceof Raw ? v.text : JSON.stringify(v)}`).join(',')}}`,
  );

const cniArgKey = fc.oneof(
  fc.constantFrom(
    'IgnoreUnknown',
    'K8S_POD_NAMESPACE',
    'K8S_POD_NAME',
    'K8S_POD_UID',
    'K8S_POD_INFRA_CONTAINER_ID',
    'IP',
    'FOO',
    '__proto__',
    'constructor',
  ),
  hostileString,
);
const cniArgValue = fc.oneof(fc.constantFrom('1', 'true', 'ns1', 'p1', 'uid-p1', 'a=b', ''), address);

const cniArgs = fc.oneof(
  fc
    .array(fc.tuple(cniArgKey, cniArgValue), { maxLength: 4 })
    .map((pairs) =>
      ['IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=p1', ...pairs.map(([k, v]) => `${k}=${v}`)].join(
        ';',
      ),
    ),
  fc.array(address, { minLength: 1, maxLength: 3 }).map((ips) => `IgnoreUnknown=1;IP=${ips.join(',')}`),
  hostileString,
);

const route = fc.record(
  {
    dst: fc.oneof(address, anyJson),
    gw: fc.oneof(address, anyJson),
    mtu: numbers,
    priority: numbers,
    scope: fc.constantFrom<unknown>(0, 255, 256, -1),
  },
  { requiredKeys: ['dst'] },
);

const podAnnotations = fc.oneof(
  fc
    .array(
      fc.oneof(
        fc.tuple(fc.constant('ipam.blockipam.io/ippools'), annotation(poolRef)),
        fc.tuple(fc.constant('ipam.blockipam.io/ip-addrs'), annotation(address)),
        fc.tuple(fc.constantFrom('__proto__', 'constructor', 'x'), anyJson),
      ),
      { maxLength: 3 },
    )
    .map(objectText),
  anyJson,
);

/** The value arbitrary of each field. */
const valueOf: Readonly<Record<string, fc.Arbitrary<unknown>>> = {
  CNI_COMMAND: fc.oneof(fc.constantFrom('add', 'Add', 'ADD ', 'DELETE', 'VERSION\0'), hostileString),
  CNI_CONTAINERID: hostileString,
  CNI_NETNS: hostileString,
  CNI_IFNAME: fc.oneof(fc.constantFrom('eth0.1', 'a234567890123456', 'é'.repeat(8), 'et h0'), hostileString),
  CNI_PATH: hostileString,
  CNI_ARGS: cniArgs,
  stdin: fc.oneof(
    fc.constantFrom<unknown>('', 'null', '[]', '"x"', '1', '{', '{}{}', '\uFEFF{}'),
    fc.uint8Array({ maxLength: 64 }).map((b) => new TextDecoder().decode(b)),
    hostileString,
    fc.constant(deep(100_000).text),
  ),
  cniVersion: fc.oneof(
    fc.constantFrom('0.0.9', '1.0', '1.0.0 ', 'v1.0.0', '1.1.0\0', '99.99.99', '0.3.1'),
    anyJson,
  ),
  name: fc.oneof(fc.constantFrom(big, 'a.b', 'a/b', 'net_1-x.y'), anyJson),
  ipam: anyJson,
  'ipam.type': anyJson,
  'ipam.nodeName': fc.oneof(fc.constantFrom('node-2', 'Node-1', 'node_1', big), anyJson),
  'ipam.assignIPv4': fc.oneof(fc.constant(false), anyJson),
  'ipam.assignIPv6': fc.oneof(fc.constant(true), anyJson),
  'ipam.ipv4Pools': list(poolRef),
  'ipam.ipv6Pools': list(poolRef),
  'ipam.routes': fc.oneof(fc.array(route, { maxLength: 3 }), anyJson),
  'ipam.dns': fc.oneof(fc.record({ nameservers: list(address), domain: anyJson }), anyJson),
  'ipam.logLevel': fc.oneof(fc.constantFrom('INFO', 'trace'), anyJson),
  'ipam.mode': fc.oneof(fc.constantFrom('agent', 'standalone', 'Agent', 'direct', 'agent\0', big), anyJson),
  'ipam.__proto__': anyJson,
  'ipam.constructor': anyJson,
  args: anyJson,
  'args.cni.ips': list(address),
  runtimeConfig: anyJson,
  'runtimeConfig.ips': list(address),
  'runtimeConfig.io.kubernetes.cri.pod-annotations': podAnnotations,
  prevResult: fc.oneof(
    fc.record({ cniVersion: anyJson, ips: list(fc.record({ address: fc.oneof(address, anyJson) })) }),
    fc.record({ cniVersion: fc.constant('0.2.0'), ip4: anyJson }),
    anyJson,
  ),
  'cni.dev/valid-attachments': list(fc.record({ containerID: anyJson, ifname: anyJson })),
  ['__proto__']: anyJson,
  'pod.ippools': annotation(poolRef),
  'pod.ip-addrs': annotation(address),
  'namespace.ippools': annotation(poolRef),
};
for (const f of numberFields) (valueOf as Record<string, fc.Arbitrary<unknown>>)[f] = numbers;
// Paths stay inside the run's directory: `{dir}` is replaced by it (a fuzzed absolute path would
// have the plugin create files anywhere on the host); the rest are rejected by the schema.
const pathValue = fc.oneof(
  hostileString.map((s) => `{dir}/${s.replaceAll('/', '_').replace(/^\.\.?$/, 'dot')}`),
  hostileString.filter((s) => !s.startsWith('/')),
  anyJson.filter((v) => typeof v !== 'string' || !v.startsWith('/')),
);
for (const f of pathFields) (valueOf as Record<string, fc.Arbitrary<unknown>>)[f] = pathValue;

/** Every field, for the outcome table. */
export const fields: readonly string[] = Object.keys(valueOf);

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  ...fields.map((field) =>
    fc.oneof(
      { weight: 9, arbitrary: (valueOf[field] as fc.Arbitrary<unknown>).map((value) => ({ field, value })) },
      { weight: 1, arbitrary: fc.constant({ field, value: undefined }) },
    ),
  ),
);

const versionsFrom = (min: string): string[] =>
  ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'].filter((v) => v >= min);

/** A command with a cniVersion that allows it, and 0–3 mutations (mostly ADD). */
export const caseArb: fc.Arbitrary<Case> = fc
  .record({
    command: fc.constantFrom(
      ...['ADD', 'ADD', 'ADD', 'ADD', 'ADD', 'ADD', 'DEL', 'DEL', 'CHECK', 'GC', 'STATUS'],
    ),
    version: fc.nat(6),
    withPod: fc.boolean(),
    mutations: fc.array(mutation, { minLength: 1, maxLength: 3 }),
  })
  .map(({ command, version, withPod, mutations }) => {
    const allowed = versionsFrom({ CHECK: '0.4.0', GC: '1.1.0', STATUS: '1.1.0' }[command] ?? '0.1.0');
    return {
      command,
      cniVersion: allowed[version % allowed.length] as string,
      withPod,
      mutations,
    };
  });
