// The agent's command line refuses what it cannot use, naming the flag and the value: a node
// name the API server would not accept, a port or a number that is not one ("abc" is "not a
// number", not "NaN"), a bind host that is neither an address nor a host name, an MTU outside
// what a veth can have. (The entry's one-line, exit-2 report: test/shared/daemon-cli.test.ts.)
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, test } from 'node:test';
import { IMAGE_FORWARDER, parseOptions } from '../../block-controller/agent/options.ts';

const base = ['--node-name', 'node-1'];

describe('agent options', () => {
  for (const name of ['Node_1', 'node 1', '-node', 'node-', 'a'.repeat(254), 'nöde'])
    test(`--node-name ${JSON.stringify(name.length > 20 ? `${name.slice(0, 8)}…` : name)} is refused`, async () =>
      assert.rejects(
        parseOptions([`--node-name=${name}`], {}),
        /--node-name must be a Kubernetes node name/,
      ));
  for (const name of ['node-1', 'ip-10-0-0-1.ec2.internal', '0'])
    test(`--node-name ${name} is taken`, async () =>
      assert.equal((await parseOptions(['--node-name', name], {})).nodeName, name));

  test('--forwarder-binary: the file named; "" for none; else the image forwarder only where it exists', async () => {
    assert.equal(
      (await parseOptions([...base, '--forwarder-binary', '/x/fwd'], {})).forwarderBinary,
      '/x/fwd',
    );
    assert.equal((await parseOptions([...base, '--forwarder-binary='], {})).forwarderBinary, undefined);
    assert.equal(
      (await parseOptions(base, {})).forwarderBinary,
      existsSync(IMAGE_FORWARDER) ? IMAGE_FORWARDER : undefined,
    );
  });
  test('--metrics-port abc: not a number', async () =>
    assert.rejects(
      parseOptions([...base, '--metrics-port', 'abc'], {}),
      /^Error: --metrics-port must be a port 0-65535 \(0 = any free port\), not a number$/,
    ));
  test('--upkeep-seconds abc: not a number', async () =>
    assert.rejects(
      parseOptions([...base, '--upkeep-seconds', 'abc'], {}),
      /--upkeep-seconds must be a number >= 0, not a number$/,
    ));

  for (const host of ['not a host', 'a/b', '-x', '', '999.1.1.1', '10.0.0'])
    test(`--metrics-host ${JSON.stringify(host)} is refused`, async () =>
      assert.rejects(
        parseOptions([...base, `--metrics-host=${host}`], {}),
        /--metrics-host must be an IP address or a host name/,
      ));
  for (const host of ['127.0.0.1', '::', 'localhost', 'node-1.example'])
    test(`--metrics-host ${host} is taken`, async () =>
      assert.equal((await parseOptions([...base, '--metrics-host', host], {})).metricsHost, host));

  test('--ipam-socket: the default path, "" (off), an absolute path; a relative or too long one is refused', async () => {
    assert.equal((await parseOptions(base, {})).ipamSocket, '/var/run/blockipam/agent/ipam.sock');
    assert.equal((await parseOptions([...base, '--ipam-socket='], {})).ipamSocket, '');
    assert.equal((await parseOptions([...base, '--ipam-socket=/run/x.sock'], {})).ipamSocket, '/run/x.sock');
    for (const bad of ['x.sock', `/${'a'.repeat(107)}`])
      await assert.rejects(
        parseOptions([...base, `--ipam-socket=${bad}`], {}),
        /--ipam-socket must be an absolute path of at most 104 bytes/,
      );
  });

  for (const mtu of ['99999999', '65536', '575', '1500.5', 'abc'])
    test(`--mtu ${mtu} is refused`, async () =>
      assert.rejects(parseOptions([...base, '--mtu', mtu], {}), /--mtu must be an integer 576-65535, not /));
  for (const mtu of [576, 1450, 9000, 65535])
    test(`--mtu ${mtu} is taken`, async () =>
      assert.equal((await parseOptions([...base, '--mtu', String(mtu)], {})).mtu, mtu));

  test('--masquerade: not given = undefined (nft left alone), true, false; --nft-command', async () => {
    assert.equal((await parseOptions(base, {})).masquerade, undefined);
    assert.equal((await parseOptions([...base, '--masquerade'], {})).masquerade, true);
    assert.equal((await parseOptions([...base, '--masquerade=false'], {})).masquerade, false);
    assert.deepEqual((await parseOptions(base, {})).nftCommand, ['nft']);
  });
  test('--non-masquerade-cidr: masked CIDRs of both families taken; anything else refused, named', async () => {
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
    assert.deepEqual((await parseOptions(base, {})).nonMasqueradeCidrs, []);
    for (const bad of ['10.0.0.1/8', '10.0.0.0', '10.0.0.0/33', 'fd00::/129', 'nope', '010.0.0.0/8'])
      await assert.rejects(
        parseOptions([...base, `--non-masquerade-cidr=${bad}`], {}),
        new RegExp(`--non-masquerade-cidr must be a masked CIDR .*not "${bad.replace(/[.]/g, '\\.')}"`),
      );
  });
  test('--owner-daemonset: taken with --install-cni, refused without it', async () => {
    const install = ['--install-cni', '--service-account', 'p', '--namespace', 'kube-system'];
    assert.equal(
      (await parseOptions([...base, ...install, '--owner-daemonset', 'blockipam-agent'], {})).ownerDaemonSet,
      'blockipam-agent',
    );
    assert.equal((await parseOptions([...base, ...install], {})).ownerDaemonSet, undefined);
    await assert.rejects(
      parseOptions([...base, '--owner-daemonset', 'blockipam-agent'], {}),
      /--owner-daemonset needs --install-cni/,
    );
  });
});
