// The netconf's addresses through core's one address module (the plugin's own addr.ts is gone):
// route `dst` masked to its canonical network (RFC 5952 for IPv6), static IPs with or without a
// prefix, and what the protocol now refuses with code 7 naming the field — IPv6 written with an
// embedded IPv4 part, out-of-range prefixes, a gateway of the other family.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseNetConf, staticList } from '../../../core/cni/netconf.ts';
import { CniError } from 'blockipam/core/cni/errors';

const conf = (ipam: Record<string, unknown>): string =>
  JSON.stringify({ cniVersion: '1.1.0', name: 'n', ipam: { type: 'blockipam', ...ipam } });

function refused(f: () => unknown, field: RegExp): void {
  assert.throws(f, (e: unknown) => e instanceof CniError && e.code === 7 && field.test(String(e.details)));
}

void describe('netconf addresses', () => {
  const masks: [string, string][] = [
    ['192.168.1.7/16', '192.168.0.0/16'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['fd00:0:0:0:0:0:0:5/64', 'fd00::/64'],
    ['2001:db8:0:0:1:0:0:1/128', '2001:db8::1:0:0:1/128'],
    // upper case is accepted and written canonically (RFC 5952: lower case)
    ['FD00::/64', 'fd00::/64'],
  ];
  for (const [dst, want] of masks)
    void it(`route dst ${dst} → ${want}`, () =>
      assert.equal(parseNetConf(conf({ routes: [{ dst }] })).routes[0]?.dst, want));
  for (const dst of ['10.0.0.0/33', '10.0.0.0', 'fd00::/129', 'x/8', '::ffff:10.1.2.3/128', '10.0.0.0/08'])
    void it(`route dst ${dst} refused`, () =>
      refused(() => parseNetConf(conf({ routes: [{ dst }] })), /routes\[0\]\.dst/));
  void it('a gateway of the other family is refused', () =>
    refused(() => parseNetConf(conf({ routes: [{ dst: '10.0.0.0/8', gw: 'fd00::1' }] })), /routes\[0\]\.gw/));
  void it('static IPs: a valid prefix is dropped, one per family', () => {
    assert.deepEqual(staticList(['10.1.0.7/24', 'fd00::7'], 'ips'), ['10.1.0.7', 'fd00::7']);
    refused(() => staticList(['10.1.0.7/40'], 'ips'), /ips\[0\]/);
    refused(() => staticList(['::1.2.3.4'], 'ips'), /ips\[0\]/);
    refused(() => staticList(['10.1.0.7', '10.1.0.8'], 'ips'), /more than one IPv4/);
  });
  void it('static IPs in upper case are accepted (core parses IPv6 in any case)', () =>
    assert.deepEqual(staticList(['FD00::7/64'], 'ips'), ['FD00::7']));
  // The pool lists take IPPool names; a CIDR (any case) was refused with the bare name regex.
  for (const entry of ['FD00::/64', 'fd00::/64', 'Default-V6'])
    void it(`ipv6Pools entry ${entry} is refused as not an IPPool name`, () =>
      refused(
        () => parseNetConf(conf({ ipv6Pools: [entry] })),
        new RegExp(
          `^ipam\\.ipv6Pools\\[0\\]: "${entry.replace('/', '\\/')}" is not an IPPool name: give the pool's metadata\\.name \\(lower-case letters, digits, '-' and '\\.'\\), not its CIDR$`,
        ),
      ));
  void it('an upper-case ipam.nodeName is refused naming the rule', () =>
    refused(
      () => parseNetConf(conf({ nodeName: 'Node-A' })),
      /ipam\.nodeName: "Node-A" is not a Kubernetes node name \(lower-case/,
    ));
});
