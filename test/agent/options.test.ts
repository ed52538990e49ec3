// The agent's command line (block-controller/agent/options.ts) refuses what it cannot use, naming
// the flag and the value: a node name the API server would not accept, a port or a number that is
// not one ("abc" is "not a number", not "NaN"), a bind host that is neither an address nor a host
// name, an MTU outside what a veth can have, plugin settings and conflist names the plugin would
// refuse at every call, token lifetimes the TokenRequest API refuses only after the install. (The
// entry's one-line, exit-2 report: test/shared/daemon-cli.test.ts; the plugin reading its flags
// back: test/agent/conflist.test.ts.)
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, test } from 'node:test';
import { IMAGE_FORWARDER, parseOptions } from '../../block-controller/agent/options.ts';
import type { AgentOptions } from '../../block-controller/agent/options.ts';

const base = ['--node-name', 'node-1'];
const install = ['--install-cni', '--service-account', 'p', '--namespace', 'kube-system'];
const short = (s: string): string => JSON.stringify(s.length > 20 ? `${s.slice(0, 8)}…` : s);

describe('agent options refused at start-up, naming the flag', () => {
  const nodeName = /--node-name must be a Kubernetes node name/;
  const metricsHost = /--metrics-host must be an IP address or a host name/;
  const socket = /--ipam-socket must be an absolute path of at most 104 bytes/;
  const mtu = /--mtu must be an integer 576-65535, not /;
  const cidr = (bad: string) =>
    new RegExp(`--non-masquerade-cidr must be a masked CIDR .*not "${bad.replace(/[.]/g, '\\.')}"`);
  const conflistName = /--conflist-name must be a file name ending in \.conflist/;
  for (const [args, message] of [
    ...['Node_1', 'node 1', '-node', 'node-', 'a'.repeat(254), 'nöde'].map(
      (name) => [[`--node-name=${name}`], nodeName] as const,
    ),
    [
      [...base, '--metrics-port', 'abc'],
      /^Error: --metrics-port must be a port 0-65535 \(0 = any free port\), not a number$/,
    ],
    ...['99999', '-1', '1.5'].map(
      (port) =>
        [
          [...base, '--metrics-port', port],
          new RegExp(`--metrics-port must be a port 0-65535 .*not ${port.replace('.', '\\.')}`),
        ] as const,
    ),
    [[...base, '--upkeep-seconds', 'abc'], /--upkeep-seconds must be a number >= 0, not a number$/],
    ...['not a host', 'a/b', '-x', '', '999.1.1.1', '10.0.0'].map(
      (host) => [[...base, `--metrics-host=${host}`], metricsHost] as const,
    ),
    ...['x.sock', `/${'a'.repeat(104)}`].map((bad) => [[...base, `--ipam-socket=${bad}`], socket] as const),
    ...['99999999', '65536', '575', '1500.5', 'abc'].map((v) => [[...base, '--mtu', v], mtu] as const),
    ...['10.0.0.1/8', '10.0.0.0', '10.0.0.0/33', 'fd00::/129', 'nope', '010.0.0.0/8'].map(
      (bad) => [[...base, `--non-masquerade-cidr=${bad}`], cidr(bad)] as const,
    ),
    [[...base, '--owner-daemonset', 'blockipam-agent'], /--owner-daemonset needs --install-cni/],
    [
      [...base, '--host-local-store', '/run/cni-ipam-state/kindnet'],
      /--host-local-store needs --install-cni/,
    ],
    ...['kindnet', '/', 'run/x'].map(
      (bad) =>
        [
          [...base, `--host-local-store=${bad}`],
          /--host-local-store must be an absolute directory path/,
        ] as const,
    ),
    [
      [...base, '--host-local-grace-seconds', '-1'],
      /--host-local-grace-seconds must be a number >= 0, not -1/,
    ],
    [[...base, '--assign-ipv4=false'], /--assign-ipv4=false needs --assign-ipv6/],
    [
      [...base, '--plugin-log-file', 'plugin.log'],
      /--plugin-log-file must be an absolute path, not "plugin.log"/,
    ],
    [[...base, '--plugin-timeout-ms', '99'], /--plugin-timeout-ms must be an integer 100-600000, not 99/],
    [
      [...base, '--plugin-timeout-ms', 'abc'],
      /--plugin-timeout-ms must be an integer 100-600000, not a number/,
    ],
    [
      [...base, '--plugin-lock-timeout-ms', '-1'],
      /--plugin-lock-timeout-ms must be an integer 0-600000, not -1/,
    ],
    [[...base, '--plugin-lock-timeout-ms', '600001'], /--plugin-lock-timeout-ms must be an integer 0-600000/],
    [
      [...base, '--plugin-lock-timeout-ms', '1.5'],
      /--plugin-lock-timeout-ms must be an integer 0-600000, not 1.5/,
    ],
    [[...base, '--plugin-log-level', 'trace'], /plugin-log-level.*trace|Invalid values/s],
    // what the conflist carries: the plugin would refuse these names at every call
    [[...base, '--cni-version', '9.9.9'], /cni-version.*9\.9\.9|Invalid values/s],
    [[...base, '--network-name', 'bad name'], /--network-name "bad name": must match/],
    [[...base, '--network-name', `n${'a'.repeat(256)}`], /--network-name .*257 characters, at most 256/],
    [[...base, '--conflist-name', '../../x.conflist'], conflistName],
    [[...base, '--conflist-name', 'blockipam.conf'], conflistName],
    // refused by the TokenRequest API only after the plugin was installed
    [
      [...base, '--token-expiration-seconds', '1'],
      /--token-expiration-seconds must be an integer 600-86400, not 1/,
    ],
    [
      [...base, '--token-refresh-seconds', '99999'],
      /--token-refresh-seconds must be a number above 0 and below/,
    ],
    [[...base, '--token-refresh-seconds', '-1'], /--token-refresh-seconds must be a number above 0/],
    [
      [...base, '--api-server', 'not a url'],
      /--api-server is not an https:\/\/ or http:\/\/ URL: "not a url"/,
    ],
    [
      [...base, '--plugin-api-server', 'ftp://x'],
      /--plugin-api-server is not an https:\/\/ or http:\/\/ URL/,
    ],
  ] as const)
    test(`${args
      .slice(args[0] === base[0] ? 2 : 0)
      .map(short)
      .join(' ')}`, async () => assert.rejects(parseOptions(args, {}), message));
});

describe('agent options taken', () => {
  // one case per line: the arguments after --node-name node-1, the field, its value
  const cases: [readonly string[], keyof AgentOptions, unknown][] = [
    ...['node-1', 'ip-10-0-0-1.ec2.internal', '0'].map(
      (name) => [['--node-name', name], 'nodeName', name] as [readonly string[], keyof AgentOptions, unknown],
    ),
    [['--forwarder-binary', '/x/fwd'], 'forwarderBinary', '/x/fwd'],
    [['--forwarder-binary='], 'forwarderBinary', undefined],
    // else the image forwarder only where it exists
    [[], 'forwarderBinary', existsSync(IMAGE_FORWARDER) ? IMAGE_FORWARDER : undefined],
    ...['127.0.0.1', '::', 'localhost', 'node-1.example'].map(
      (host) =>
        [['--metrics-host', host], 'metricsHost', host] as [readonly string[], keyof AgentOptions, unknown],
    ),
    [[], 'ipamSocket', '/var/run/blockipam/agent/ipam.sock'],
    [['--ipam-socket='], 'ipamSocket', ''],
    [['--ipam-socket=/run/x.sock'], 'ipamSocket', '/run/x.sock'],
    ...[576, 1450, 9000, 65535].map(
      (mtu) => [['--mtu', String(mtu)], 'mtu', mtu] as [readonly string[], keyof AgentOptions, unknown],
    ),
    // not given = undefined: nft left alone
    [[], 'masquerade', undefined],
    [['--masquerade'], 'masquerade', true],
    [['--masquerade=false'], 'masquerade', false],
    [[], 'nftCommand', ['nft']],
    [[], 'nonMasqueradeCidrs', []],
    [[...install, '--owner-daemonset', 'blockipam-agent'], 'ownerDaemonSet', 'blockipam-agent'],
    [install, 'ownerDaemonSet', undefined],
    [[], 'hostLocalStore', undefined],
    [
      [...install, '--host-local-store', '/run/cni-ipam-state/kindnet'],
      'hostLocalStore',
      '/run/cni-ipam-state/kindnet',
    ],
    [[], 'hostLocalGraceSeconds', 120],
    // IPv4 only by default; IPv6-only
    [[], 'assignIpv4', true],
    [[], 'assignIpv6', false],
    [['--assign-ipv4=false', '--assign-ipv6'], 'assignIpv4', false],
    [['--assign-ipv4=false', '--assign-ipv6'], 'assignIpv6', true],
    // the plugin's kubeconfig goes beside the conflist unless --plugin-kubeconfig names it
    [[], 'pluginKubeconfig', '/etc/cni/net.d/blockipam-kubeconfig'],
    [['--cni-conf-dir', '/tmp/x/conf'], 'pluginKubeconfig', '/tmp/x/conf/blockipam-kubeconfig'],
    [['--cni-conf-dir', '/tmp/x/conf', '--plugin-kubeconfig', '/k/kc'], 'pluginKubeconfig', '/k/kc'],
    // without --plugin-* flags nothing is written: the plugin keeps its own defaults
    [[], 'plugin', {}],
  ];
  for (const [args, field, value] of cases)
    test(`${args.map(short).join(' ') || '(defaults)'}: ${field} ${JSON.stringify(value)}`, async () => {
      const argv = args[0] === '--node-name' ? args : [...base, ...args];
      assert.deepEqual((await parseOptions(argv, {}))[field], value);
    });

  test('--non-masquerade-cidr: masked CIDRs of both families', async () => {
    const o = await parseOptions(
      [...base, '--non-masquerade-cidr=10.0.0.0/8', '--non-masquerade-cidr=fd00::/8'],
      {},
    );
    assert.deepEqual(
      o.nonMasqueradeCidrs.map((c) => [c.family, c.prefixLength]),
      [
        [4, 8],
        [6, 8],
      ],
    );
  });
});
