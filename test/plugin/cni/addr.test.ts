/** The protocol layer's address helpers: RFC 5952 formatting, route masking, CIDR parsing. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatCidr, formatIp, maskCidr, parseCidr, parseIp } from '../../../ipam-plugin/cni/addr.ts';

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
