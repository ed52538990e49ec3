// Address math: parsing, formatting, masking, block naming and ordinals, IPv4 and IPv6.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  addressTextAt,
  blockCidrFor,
  blockNameOf,
  cidrFromBlockName,
  cidrProblem,
  cidrsOverlap,
  formatCidr,
  formatIP,
  gatewayOf,
  isAllowedBlockSize,
  mustParseCidr,
  ordinalOf,
  parseCidr,
  parseIP,
  reservedOrdinals,
} from 'blockipam/core';

describe('parseIP / formatIP', () => {
  const cases: [string, string | undefined][] = [
    ['10.0.0.1', '10.0.0.1'], // plain IPv4
    ['255.255.255.255', '255.255.255.255'], // top of the space
    ['010.0.0.1', undefined], // leading zero (octal ambiguity) refused
    ['10.1', undefined], // short forms refused
    ['FD00:0:0::1', 'fd00::1'], // IPv6 canonicalised (RFC 5952)
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // longest zero run compressed
    ['fe80::1%eth0', undefined], // zones refused
    ['::', '::'], // all zeros
    ['nonsense', undefined],
  ];
  for (const [input, want] of cases) {
    it(`${input} → ${String(want)}`, () => {
      const ip = parseIP(input);
      assert.equal(ip && formatIP(ip), want);
    });
  }
});

// What parseCidr refuses: the cidrProblem cases below (each checks parseCidr agrees).
describe('parseCidr', () => {
  const cases: [string, boolean, string][] = [
    ['10.244.0.0/16', true, '10.244.0.0/16'], // masked
    ['10.244.0.1/16', false, '10.244.0.0/16'], // host bits cleared, lenient
    ['fd00::/122', true, 'fd00::/122'],
    ['fd00::40/122', true, 'fd00::40/122'],
  ];
  for (const [input, strict, want] of cases)
    it(`${input} (strict=${strict}) → ${want}`, () => {
      const cidr = parseCidr(input, { strict });
      assert.equal(cidr && formatCidr(cidr), want);
    });
});

describe('cidrProblem', () => {
  const cases: [string, boolean, string | undefined][] = [
    ['10.244.0.0/16', true, undefined], // accepted: no problem
    ['10.244.0.1/16', false, undefined], // lenient: host bits are cleared, not a problem
    [
      '10.300.0.0/16',
      true,
      '10.300.0.0 is not a valid IPv4 address (four numbers from 0 to 255, without leading zeros)',
    ], // the address, not "not masked"
    [
      '010.0.0.0/8',
      true,
      '010.0.0.0 is not a valid IPv4 address (four numbers from 0 to 255, without leading zeros)',
    ], // leading zero
    ['fd00::g/64', true, 'fd00::g is not a valid IPv6 address'], // IPv6 by its colons
    ['pool/16', true, '"pool" is not an IP address'], // neither family
    ['10.0.0.0/33', true, 'the prefix length "33" is not a whole number from 0 to 32 (IPv4)'], // past the family's width
    ['fd00::/129', true, 'the prefix length "129" is not a whole number from 0 to 128 (IPv6)'],
    ['10.0.0.0/08', true, 'the prefix length "08" is not a whole number from 0 to 32 (IPv4)'], // leading zero
    ['10.0.0.0/', true, 'the prefix length "" is not a whole number from 0 to 32 (IPv4)'], // empty
    ['10.244.0.1/16', true, 'host bits are set: the network is 10.244.0.0/16'], // strict
    ['fd00::41/122', true, 'host bits are set: the network is fd00::40/122'],
    ['10.0.0.0', true, 'no "/" and prefix length (e.g. 10.244.0.0/16)'], // no prefix
  ];
  for (const [input, strict, want] of cases)
    it(`${input} (strict=${strict}) → ${String(want)}`, () => {
      assert.equal(cidrProblem(input, { strict }), want);
      assert.equal(parseCidr(input, { strict }) === undefined, want !== undefined, 'agrees with parseCidr');
    });
});

describe('block names', () => {
  const cases: [string, string][] = [
    ['10.244.3.64/26', '10-244-3-64-26'], // docs/design-core.md §1 example
    ['fd00::/122', 'fd00---122'], // Calico's scheme
    ['fd00::40/122', 'fd00--40-122'],
    ['2001:db8:1:2:3:4:5:0/122', '2001-db8-1-2-3-4-5-0-122'], // no compression
    ['1:2:3:4::/116', '1-2-3-4---116'],
  ];
  for (const [cidr, name] of cases) {
    it(`${cidr} ↔ ${name}`, () => {
      assert.equal(blockNameOf(mustParseCidr(cidr)), name);
      const back = cidrFromBlockName(name);
      assert.equal(back && formatCidr(back), cidr);
    });
  }
  it('refuses names that are not a canonical masked CIDR', () => {
    for (const name of ['10-244-3-65-26', 'FD00---122', 'default', '10-244-3-64', '1-2-3-4-5-26'])
      assert.equal(cidrFromBlockName(name), undefined, name);
  });
  it('round-trips any IPv6 block', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
        fc.integer({ min: 116, max: 126 }),
        (value, size) => {
          const cidr = blockCidrFor({ family: 6, value }, size);
          const back = cidrFromBlockName(blockNameOf(cidr));
          assert.deepEqual(back, cidr);
        },
      ),
    );
  });
});

describe('ordinals', () => {
  it('ordinal ↔ address is exact at the top of the IPv6 space', () => {
    const block = mustParseCidr('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffc0/122');
    assert.equal(addressTextAt(block, 63), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff');
    assert.equal(ordinalOf(block, parseIP('ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe')!), 62);
    assert.equal(ordinalOf(block, parseIP('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffbf')!), undefined);
  });
  it('ordinal ↔ address round-trips for random blocks and offsets', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
        fc.integer({ min: 0, max: 4095 }),
        (v6, raw, offset) => {
          const family = v6 ? 6 : 4;
          const size = v6 ? 116 : 20;
          const value = v6 ? raw : raw & 0xffffffffn;
          const block = blockCidrFor({ family, value }, size);
          const address = parseIP(addressTextAt(block, offset));
          assert.ok(address);
          assert.equal(ordinalOf(block, address), offset);
        },
      ),
    );
  });
  it('reserved ordinals: network, gateway and (IPv4) broadcast', () => {
    assert.deepEqual(reservedOrdinals(mustParseCidr('10.0.0.0/26')), [0, 1, 63]);
    assert.deepEqual(reservedOrdinals(mustParseCidr('10.0.0.0/30')), [0, 1, 3]);
    assert.deepEqual(reservedOrdinals(mustParseCidr('fd00::/122')), [0, 1]);
    assert.equal(formatIP(gatewayOf(mustParseCidr('10.244.3.64/26'))), '10.244.3.65');
  });
  it('allowed block sizes: v4 /20–/30, v6 /116–/126', () => {
    assert.deepEqual(
      [19, 20, 30, 31, 32].map((s) => isAllowedBlockSize(4, s)),
      [false, true, true, false, false],
    );
    assert.deepEqual(
      [115, 116, 126, 127, 128].map((s) => isAllowedBlockSize(6, s)),
      [false, true, true, false, false],
    );
  });
  it('overlap is symmetric and family-aware', () => {
    const a = mustParseCidr('10.0.0.0/16');
    assert.equal(cidrsOverlap(a, mustParseCidr('10.0.255.192/26')), true);
    assert.equal(cidrsOverlap(mustParseCidr('10.0.255.192/26'), a), true);
    assert.equal(cidrsOverlap(a, mustParseCidr('10.1.0.0/26')), false);
    assert.equal(cidrsOverlap(mustParseCidr('::/96'), mustParseCidr('0.0.0.0/0')), false);
  });
});
