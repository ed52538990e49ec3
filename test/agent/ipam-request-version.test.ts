/**
 * block-controller/agent/ipam/request-version.ts: the cniVersion of an answer the agent decides
 * before it parses the request (busy, too large, not JSON), read from the request's first bytes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestCniVersion, VERSION_SCAN_BYTES } from '../../block-controller/agent/ipam/request-version.ts';

/** A request line's bytes for a netconf text `conf`, as the plugin writes it. */
const request = (conf: string, env: Record<string, string> = { CNI_COMMAND: 'ADD' }): Buffer =>
  Buffer.from(`${JSON.stringify({ v: 2, env, stdin: conf })}\n`);

void describe('requestCniVersion', () => {
  const cases: [string, Buffer | undefined, string][] = [
    // what, the bytes read, the answer's cniVersion
    ['nothing read', undefined, '1.1.0'],
    ['a netconf on one line', request('{"cniVersion":"0.4.0","name":"n"}'), '0.4.0'],
    [
      'pretty-printed (escaped newlines and tabs)',
      request('{\n\t"cniVersion" :\t "1.0.0",\n"name":"n"}'),
      '1.0.0',
    ],
    ['a version core/cni does not speak', request('{"cniVersion":"9.9.9"}'), '1.1.0'],
    ['not a string', request('{"cniVersion":1.0}'), '1.1.0'],
    ['no cniVersion', request('{"name":"n"}'), '1.1.0'],
    ['cut before the value ends', request('{"cniVersion":"0.4.0"}').subarray(0, 60), '1.1.0'],
    [
      'a cniVersion in an env value is not a netconf key',
      request('{}', { CNI_ARGS: 'cniVersion=0.4.0' }),
      '1.1.0',
    ],
    [
      'the first key wins (best effort)',
      request('{"prevResult":{"cniVersion":"0.3.1"},"cniVersion":"1.0.0"}'),
      '0.3.1',
    ],
    [
      'past the scanned bytes',
      request(`{"pad":"${'x'.repeat(VERSION_SCAN_BYTES)}","cniVersion":"0.4.0"}`),
      '1.1.0',
    ],
  ];
  for (const [what, head, expected] of cases)
    void it(`${what}: ${expected}`, () => assert.equal(requestCniVersion(head), expected));
});
