/**
 * Table-driven unit tests of the protocol helpers: addresses, CNI_ARGS, env, result conversion,
 * and that the committed ajv standalone validator matches the schema.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { generateValidator } from '../../scripts/build-plugin-codegen.ts';
import { formatCidr, formatIp, maskCidr, parseCidr, parseIp } from '../../ipam-plugin/addr.ts';
import { parseCniArgs } from '../../ipam-plugin/cni-args.ts';
import { ifnameProblem } from '../../ipam-plugin/env.ts';
import { isCniError } from '../../ipam-plugin/errors.ts';
import { prevResultAddresses } from '../../ipam-plugin/result.ts';

void describe('addr', () => {
  const roundTrip: [string, string][] = [
    ['10.0.0.1', '10.0.0.1'], // plain v4
    ['fd00:0:0:0:0:0:0:5', 'fd00::5'], // longest zero run compressed
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // first of equal runs
    ['::', '::'], // all zero
    ['::ffff:10.1.2.3', '::ffff:a01:203'], // embedded v4
    ['1:0:2:3:4:5:6:7', '1:0:2:3:4:5:6:7'], // single zero group not compressed
  ];
  for (const [inp, out] of roundTrip)
    void it(`formats ${inp} as ${out}`, () => assert.equal(formatIp(parseIp(inp)!), out));
  const masks: [string, string][] = [
    ['192.168.1.7/16', '192.168.0.0/16'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['fd00::5/64', 'fd00::/64'],
  ];
  for (const [inp, out] of masks)
    void it(`masks ${inp} to ${out}`, () => assert.equal(formatCidr(maskCidr(parseCidr(inp)!)), out));
  for (const bad of ['10.0.0.0/33', '10.0.0.0', 'fd00::/129', 'x/8', '10.0.0.0/-1']) {
    void it(`rejects CIDR ${bad}`, () => assert.equal(parseCidr(bad), undefined));
  }
});

void describe('CNI_ARGS', () => {
  void it('parses the five Kubernetes keys and IP in any order', () => {
    const a = parseCniArgs(
      'IP=10.1.0.50;K8S_POD_UID=u;IgnoreUnknown=1;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_NAMESPACE=ns',
    );
    assert.deepEqual(a, {
      podNamespace: 'ns',
      podName: 'p',
      podUID: 'u',
      infraContainerID: 'abc',
      ips: ['10.1.0.50'],
    });
  });
  const bad: [string, string][] = [
    ['A=1', 'unknown key without IgnoreUnknown'],
    ['IP=1=2', 'value containing ='],
    ['IP=10.0.0.1;', 'trailing ;'],
    ['=x', 'empty key'],
  ];
  for (const [raw, why] of bad)
    void it(`rejects ${raw} (${why}) with code 4`, () =>
      assert.throws(
        () => parseCniArgs(raw),
        (e) => isCniError(e) && e.code === 4,
      ));
  void it('IgnoreUnknown=true lets unknown keys through', () =>
    assert.deepEqual(parseCniArgs('IgnoreUnknown=true;MAC=aa').ips, []));
});

void describe('env', () => {
  const names: [string, boolean][] = [
    ['eth0', true],
    ['', false],
    ['.', false],
    ['a/b', false],
    ['a b', false],
    ['a:b', false],
    ['123456789012345', true],
    ['1234567890123456', false],
  ];
  for (const [n, ok] of names)
    void it(`ifname ${JSON.stringify(n)} ${ok ? 'valid' : 'invalid'}`, () =>
      assert.equal(ifnameProblem(n) === undefined, ok));
});

void describe('prevResult', () => {
  void it('reads 1.0.0, 0.4.0 and 0.2.0 shapes; skips junk', () => {
    assert.deepEqual(
      prevResultAddresses({ ips: [{ address: '10.0.0.2/24', interface: 1 }, { address: 'junk' }, null] }),
      ['10.0.0.2'],
    );
    assert.deepEqual(prevResultAddresses({ ip4: { ip: '10.0.0.3/24' }, ip6: { ip: 'fd00::3/64' } }), [
      '10.0.0.3',
      'fd00::3',
    ]);
    assert.deepEqual(prevResultAddresses(undefined), []);
  });
});

void describe('codegen', () => {
  void it('the committed validator is the ajv standalone output of netconf-schema.ts', () => {
    const committed = readFileSync(
      join(import.meta.dirname, '../../ipam-plugin/netconf-validate.generated.ts'),
      'utf8',
    );
    assert.equal(committed, generateValidator());
  });
});
