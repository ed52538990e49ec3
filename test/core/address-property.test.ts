// Properties of core's address parser against node:net and the WHATWG URL parser (both
// independent implementations): on random addresses written in every RFC 4291 hex form, and on
// random near-miss strings, parseIP accepts exactly what net.isIP accepts — less IPv6 with an
// embedded IPv4 part and zones, which it refuses by rule — and formatIP gives the RFC 5952 text
// that URL's IPv6 serializer gives.
import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { formatIP, parseCidr, parseIP } from 'blockipam/core';

const RUNS = 2000;
const groupsOf = (value: bigint): number[] =>
  Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));

/** An IPv6 value with long zero runs likely (they are where compression goes wrong). */
const v6 = fc
  .array(fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 0, max: 0xffff })), {
    minLength: 8,
    maxLength: 8,
  })
  .map((g) => g.reduce((acc, x) => (acc << 16n) | BigInt(x), 0n));

/** One of the hex spellings of `value`: full, leading zeros, upper case, one zero run compressed. */
const spelled = (value: bigint) =>
  fc.record({ upper: fc.boolean(), pad: fc.boolean(), cut: fc.nat(8), len: fc.nat(8) }).map((o) => {
    const hex = groupsOf(value).map((g) => (o.pad ? g.toString(16).padStart(4, '0') : g.toString(16)));
    const start = Math.min(o.cut, 7);
    const end = Math.min(8, start + o.len);
    const zeros = groupsOf(value)
      .slice(start, end)
      .every((g) => g === 0);
    const text =
      end - start >= 1 && zeros
        ? `${hex.slice(0, start).join(':')}::${hex.slice(end).join(':')}`
        : hex.join(':');
    return o.upper ? text.toUpperCase() : text;
  });

/** Strings close to addresses: digits, hex, dots, colons, percent, slash. */
const nearMiss = fc
  .array(fc.constantFrom(...'0123456789abcdefABCDEF.:%/ '.split('')), { maxLength: 45 })
  .map((cs) => cs.join(''));

describe('parseIP against node:net and URL', () => {
  it('every spelling of a random IPv6 address parses to it and formats as URL serializes it', () => {
    fc.assert(
      fc.property(
        v6.chain((value) => fc.tuple(fc.constant(value), spelled(value))),
        ([value, text]) => {
          assert.equal(isIP(text), 6, text);
          const ip = parseIP(text);
          assert.ok(ip && ip.family === 6 && ip.value === value, text);
          assert.equal(formatIP(ip), new URL(`http://[${text}]/`).hostname.slice(1, -1));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('a random IPv4 address round-trips and agrees with isIP', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 }), (octets) => {
        const text = octets.join('.');
        assert.equal(isIP(text), 4);
        const ip = parseIP(text);
        assert.ok(ip && ip.family === 4);
        assert.equal(formatIP(ip), text);
      }),
      { numRuns: RUNS },
    );
  });

  it('on near-miss strings it accepts what isIP accepts, except embedded IPv4 and zones', () => {
    fc.assert(
      fc.property(nearMiss, (text) => {
        const node = isIP(text);
        const refusedByRule = node === 6 && (text.includes('.') || text.includes('%'));
        assert.equal(parseIP(text)?.family ?? 0, refusedByRule ? 0 : node, JSON.stringify(text));
      }),
      { numRuns: RUNS * 5 },
    );
  });

  const embedded: string[] = ['::1.2.3.4', '::ffff:10.1.2.3', '64:ff9b::192.0.2.33', '::FFFF:127.0.0.1'];
  for (const text of embedded)
    it(`IPv6 written with an embedded IPv4 part is refused: ${text} (node:net accepts it)`, () => {
      assert.equal(isIP(text), 6);
      assert.equal(parseIP(text), undefined);
      assert.equal(parseCidr(`${text}/128`), undefined);
    });
});
