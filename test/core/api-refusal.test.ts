/**
 * core's refusal rules: boundMessage keeps what names the field, node, pool or policy; apiRefusalOf
 * labels an admission policy's denial apart from RBAC, 401 and TLS; nodeIpamErrorOf carries the
 * refusal whole to the agent's answer; credentialNodeProblem / tokenNodeName name a credential
 * bound to another Node.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ApiError,
  apiRefusalOf,
  boundMessage,
  DecodeError,
  InvalidError,
  MAX_MESSAGE_CHARS,
  TlsError,
  UnavailableError,
} from 'blockipam/core';
import { errorFor, tokenExpiryMs, tokenNodeName } from 'blockipam/core/kube';
import { credentialNodeProblem, nodeIpamErrorOf, servedNodeProblem } from 'blockipam/core/node-ipam';

/** The API server's words for a policy's denial (kube-apiserver's validating policy dispatcher). */
const denial = (
  policy: string,
  message: string,
  object = 'ipamblocks.ipam.blockipam.io "10-78-0-0-26"',
): string =>
  `${object} is forbidden: ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: ${message}`;

/** The body of a Kubernetes Status answer. */
const status = (code: number, reason: string, message: string): string =>
  JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });

void describe('boundMessage', () => {
  const cases: { what: string; text: string; keep: RegExp[]; max?: number }[] = [
    {
      // a policy's list of ordinals runs long: node and block (head) and the verdict (tail) stay
      what: 'a long list in the middle',
      text: `blockipam: node n1 may add or remove only its own allocations in IPAMBlock 10-78-1-0-26 (affine to n2); ordinal(s) ${Array.from({ length: 3000 }, (_, i) => i).join(', ')} belong to other nodes`,
      keep: [
        /^blockipam: node n1 may add or remove only its own allocations in IPAMBlock 10-78-1-0-26 \(affine to n2\); ordinal/,
        /belong to other nodes$/,
        /\[\d+ characters cut\]/,
      ],
    },
    {
      // an echoed value (a hostile annotation) is shortened inside its quotes; the field and pool names stay
      what: 'a huge quoted value',
      text: `pod ns/p: annotation ipam.blockipam.io/ipv4pools: pool "${'x'.repeat(200_000)}" is not an IPPool; valid pools: "pool-a", "pool-b"`,
      keep: [
        /^pod ns\/p: annotation ipam\.blockipam\.io\/ipv4pools: pool "x{64}…\[199920 characters cut\]…x{16}" is not an IPPool; valid pools: "pool-a", "pool-b"$/,
      ],
    },
    {
      // a Kubernetes name (≤ 253 characters) is never shortened, even in a message that must be
      what: 'a long name stays whole',
      text: `pool "${'p'.repeat(253)}" in IPAMBlock b: ${'y'.repeat(5000)}`,
      keep: [new RegExp(`^pool "${'p'.repeat(253)}" in IPAMBlock b: y+ … \\[\\d+ characters cut\\] … y+$`)],
    },
  ];
  for (const c of cases)
    void it(c.what, () => {
      const out = boundMessage(c.text);
      assert.ok(out.length <= MAX_MESSAGE_CHARS, `${out.length} characters`);
      for (const re of c.keep) assert.match(out, re);
    });
  void it('a text that fits is unchanged; the bound holds for any max ≥ 64', () => {
    assert.equal(boundMessage('short'), 'short');
    const text = 'z'.repeat(100_000);
    for (const max of [64, 300, 1000, 4096]) assert.ok(boundMessage(text, max).length <= max, String(max));
  });
});

void describe('apiRefusalOf', () => {
  const long = `ordinal(s) ${Array.from({ length: 1500 }, (_, i) => i).join(', ')} belong to other nodes`;
  const cases: {
    what: string;
    error: Error;
    kind: string | undefined;
    match?: RegExp;
    policy?: string;
  }[] = [
    {
      what: 'a policy denial with reason Forbidden (403): admission, the policy and the node named, the tail kept',
      error: errorFor(
        403,
        status(
          403,
          'Forbidden',
          denial(
            'claims-blockipam-node-blocks',
            `blockipam: node n1 may add or remove only its own allocations in IPAMBlock 10-78-1-0-26 (affine to n2); ${long}`,
          ),
        ),
        'PUT /apis/ipam.blockipam.io/v1alpha1/ipamblocks/10-78-1-0-26',
      ),
      kind: 'admission',
      policy: 'claims-blockipam-node-blocks',
      match:
        /^ValidatingAdmissionPolicy 'claims-blockipam-node-blocks' denied the request \(HTTP 403 Forbidden\): PUT \/apis\/\S+: HTTP 403: .*node n1 may add or remove only its own allocations in IPAMBlock 10-78-1-0-26 \(affine to n2\); ordinal.*belong to other nodes$/s,
    },
    {
      what: 'a policy denial with reason Invalid (422) is admission too, not a schema rejection',
      error: errorFor(
        422,
        status(422, 'Invalid', denial('p', 'spec.cidr: outside pool "claims-pool"')),
        'POST /x',
      ),
      kind: 'admission',
      policy: 'p',
      match: /HTTP 422 Invalid.*spec\.cidr: outside pool "claims-pool"$/,
    },
    {
      what: 'a webhook denial',
      error: errorFor(
        400,
        status(400, 'BadRequest', 'admission webhook "vpod.example.com" denied the request: no'),
        'POST /x',
      ),
      kind: 'admission',
      policy: 'vpod.example.com',
    },
    {
      what: 'RBAC 403: forbidden, "check the RBAC"',
      error: errorFor(
        403,
        status(
          403,
          'Forbidden',
          'ipamblocks.ipam.blockipam.io is forbidden: User "u" cannot list resource "ipamblocks"',
        ),
        'GET /x',
      ),
      kind: 'forbidden',
      match: /permission denied \(HTTP 403 Forbidden\): check the RBAC.*User "u" cannot list/,
    },
    {
      what: '401: auth, not RBAC',
      error: errorFor(401, status(401, 'Unauthorized', 'Unauthorized'), 'GET /x'),
      kind: 'auth',
      match: /^credentials not accepted \(HTTP 401 Unauthorized\)/,
    },
    {
      what: 'TLS (server): auth naming the certificate',
      error: new TlsError('GET /x: self-signed certificate in certificate chain', 'server'),
      kind: 'auth',
      match: /certificate is not trusted.*self-signed/,
    },
    {
      what: 'schema 422: apiRejected, the field kept though the value is huge',
      error: new InvalidError(
        `IPAMBlock.ipam.blockipam.io "b" is invalid: spec.allocations.3.handle: Invalid value: "${'h'.repeat(9000)}": must be at most 512`,
        422,
      ),
      kind: 'apiRejected',
      match: /spec\.allocations\.3\.handle: Invalid value: "h{64}….*h{16}": must be at most 512$/,
    },
    {
      what: 'a non-JSON answer: apiRejected',
      error: new DecodeError('GET /x: HTTP 200 answer is not JSON', 200),
      kind: 'apiRejected',
      match: /^GET \/x/,
    },
    {
      what: 'unreachable: none (transient)',
      error: new UnavailableError('GET /x: refused'),
      kind: undefined,
    },
    { what: 'another status: none', error: new ApiError('GET /x: HTTP 405: nope', 405), kind: undefined },
    {
      what: 'a denial phrase on a status no denial comes with (405): none, not admission',
      error: errorFor(405, status(405, 'MethodNotAllowed', denial('p', 'no')), 'PATCH /x'),
      kind: undefined,
    },
    {
      what: 'a denial phrase on a 401: auth, not admission',
      error: errorFor(401, status(401, 'Unauthorized', denial('p', 'no')), 'GET /x'),
      kind: 'auth',
    },
    {
      what: 'a schema 422 echoing a denial phrase inside a value: apiRejected, not admission',
      error: errorFor(
        422,
        status(
          422,
          'Invalid',
          `IPAMBlock.ipam.blockipam.io "b" is invalid: spec.allocations.0.handle: Invalid value: "${denial('fake', 'x', 'a')}": must match`,
        ),
        'PUT /x',
      ),
      kind: 'apiRejected',
    },
    {
      what: 'an RBAC 403 naming a policy after its own words: forbidden, not admission',
      error: errorFor(
        403,
        status(
          403,
          'Forbidden',
          `User "u" cannot update: see ValidatingAdmissionPolicy 'p' with binding 'p' denied request`,
        ),
        'PUT /x',
      ),
      kind: 'forbidden',
    },
    {
      what: "a policy denial with no object name (NewForbidden's `<resource> is forbidden: `): admission",
      error: errorFor(
        403,
        status(403, 'Forbidden', denial('p', 'no', 'ipamblocks.ipam.blockipam.io')),
        'POST /x',
      ),
      kind: 'admission',
      policy: 'p',
    },
  ];
  for (const c of cases)
    void it(c.what, () => {
      const r = apiRefusalOf(c.error);
      assert.equal(r?.kind, c.kind);
      if (c.match) assert.match(r?.message ?? '', c.match);
      if (c.policy) assert.equal(r?.policy, c.policy);
      if (r) assert.ok(r.message.length <= MAX_MESSAGE_CHARS);
    });
  void it('nodeIpamErrorOf: the agent answers the same kind and the same text', () => {
    const e = errorFor(403, status(403, 'Forbidden', denial('pol', `node n1 ${long}`)), 'PUT /x');
    assert.deepEqual(nodeIpamErrorOf(e), { kind: 'admission', message: apiRefusalOf(e)?.message });
    const away = nodeIpamErrorOf(new UnavailableError(`GET /x: ${'w'.repeat(10_000)}`));
    assert.equal(away.kind, 'unavailable');
    assert.ok(away.message.length <= MAX_MESSAGE_CHARS);
  });
});

void describe('a credential bound to another node', () => {
  const jwt = (claims: unknown): string =>
    ['{"alg":"RS256"}', JSON.stringify(claims), 'sig']
      .map((p) => Buffer.from(p).toString('base64url'))
      .join('.');
  void it('tokenNodeName reads the node claim of a bound token, nothing else', () => {
    assert.equal(tokenNodeName(jwt({ 'kubernetes.io': { node: { name: 'n1', uid: 'u' } } })), 'n1');
    assert.equal(tokenNodeName(jwt({ 'kubernetes.io': { serviceaccount: { name: 'sa' } } })), undefined);
    assert.equal(tokenNodeName('opaque-static-token'), undefined);
    assert.equal(tokenNodeName('a.!!!.c'), undefined);
  });
  void it('tokenExpiryMs reads the exp claim (seconds) as ms, nothing else', () => {
    assert.equal(tokenExpiryMs(jwt({ exp: 1_800_000_000 })), 1_800_000_000_000);
    for (const token of [jwt({ exp: '1800000000' }), jwt({ sub: 'x' }), 'opaque', 'a.!!!.c'])
      assert.equal(tokenExpiryMs(token), undefined, token);
  });
  void it('credentialNodeProblem: the same message shape as the agent’s servedNodeProblem', () => {
    assert.equal(credentialNodeProblem('n1', 'n1'), undefined);
    assert.equal(credentialNodeProblem('n1', undefined), undefined);
    const mine = credentialNodeProblem('n2', 'n1') ?? '';
    const agent = servedNodeProblem('n2', 'n1') ?? '';
    const tail = ' node "n1", but this plugin\'s node name is "n2" (ipam.nodeName';
    assert.ok(mine.includes(tail) && agent.includes(tail), `${mine}\n${agent}`);
  });
});
