/**
 * API failures mapped to documented CNI codes by core's apiRefusalOf (105 credentials/TLS/RBAC,
 * 106 rejected as invalid or not JSON, 107 an admission policy's denial), the API server's message
 * whole in details; the error document's details bounded by core's boundMessage (MAX_DETAILS),
 * never cut before the part naming the field, node or pool.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, DecodeError, InvalidError, TlsError } from 'blockipam/core';
import { errorFor } from 'blockipam/core/kube';
import { apiFailure } from '../../../ipam-plugin/backend/api-failure.ts';
import { CniCode, CniError, MAX_DETAILS, toErrorDocument } from 'blockipam/core/cni/errors';

/** A policy's denial as kube-apiserver answers it (a Status body). */
const denied = (code: number, reason: string, message: string): Error =>
  errorFor(
    code,
    JSON.stringify({
      kind: 'Status',
      code,
      reason,
      message: `ipamblocks.ipam.blockipam.io "10-78-0-0-26" is forbidden: ValidatingAdmissionPolicy 'r-blockipam-node-claims' with binding 'r-blockipam-node-claims' denied request: ${message}`,
    }),
    'POST /apis/ipam.blockipam.io/v1alpha1/ipamblocks',
  );

void describe('apiFailure', () => {
  void it('API 422 → 106, the echoed value shortened, the field kept; 401/403 and untrusted TLS → 105', () => {
    const e422 = apiFailure(new InvalidError(`Pod "${'a'.repeat(5000)}" is invalid: spec.x: bad`, 422));
    assert.equal(e422?.code, 106);
    assert.ok((e422?.details.length ?? 0) < 400);
    assert.match(e422?.details ?? '', /is invalid: spec\.x: bad$/);
    const e401 = apiFailure(new ApiError('GET /x: HTTP 401: Unauthorized', 401));
    assert.equal(e401?.code, 105);
    assert.match(e401?.message ?? '', /credentials/);
    const e403 = apiFailure(new ApiError('GET /x: HTTP 403: forbidden', 403));
    assert.equal(e403?.code, 105);
    assert.match(e403?.message ?? '', /RBAC/);
    // untrusted TLS arrives as core's TlsError (the transport classifies it; no message regex here)
    const tls = apiFailure(new TlsError('GET /x: self-signed certificate in certificate chain', 'server'));
    assert.equal(tls?.code, 105);
    assert.match(tls?.details ?? '', /TLS/);
    assert.equal(apiFailure(new DecodeError('GET /x: HTTP 200 answer is not JSON', 200))?.code, 106);
    assert.equal(apiFailure(new ApiError('GET /x: HTTP 405: nope', 405)), undefined);
  });

  void it('an admission denial (403 Forbidden or 422 Invalid) → 107 naming the policy, its message whole', () => {
    // longer than the 300 characters the message was once cut at; the pool and ConfigMap come last
    const why =
      'blockipam: node claims-n1 may claim IPAMBlock 10-78-0-0-26 only in a usable IPPool; label ipam.blockipam.io/pool is "claims-pool", which the controller has not listed in ConfigMap chart-claims/claims-blockipam-claim-pools';
    for (const [code, reason] of [
      [403, 'Forbidden'],
      [422, 'Invalid'],
    ] as const) {
      const e = apiFailure(denied(code, reason, why));
      assert.equal(e?.code, CniCode.admissionDenied, reason);
      assert.equal(e?.message, 'admission policy denied the write');
      assert.match(
        e?.details ?? '',
        new RegExp(
          `^ValidatingAdmissionPolicy 'r-blockipam-node-claims' denied the request \\(HTTP ${code} ${reason}\\)`,
        ),
      );
      assert.ok(e?.details.endsWith(why), e?.details);
      // and it reaches the runtime so
      assert.ok(toErrorDocument(e, '1.0.0').details?.endsWith(why));
    }
  });
});

void describe('toErrorDocument', () => {
  void it('bounds details to MAX_DETAILS characters, the names around an echoed value kept', () => {
    const long = toErrorDocument(
      new CniError(CniCode.requestRejected, 'refused', `pool "${'x'.repeat(200_000)}" is not an IPPool`),
      '1.0.0',
    );
    assert.ok((long.details?.length ?? 0) <= MAX_DETAILS, String(long.details?.length));
    assert.match(long.details ?? '', /^pool "x+…\[\d+ characters cut\]…x+" is not an IPPool$/);
    const unquoted = toErrorDocument(
      new CniError(CniCode.internal, 'x', `a ${'y'.repeat(50_000)} z`),
      '1.0.0',
    );
    assert.ok((unquoted.details?.length ?? 0) <= MAX_DETAILS);
    assert.match(unquoted.details ?? '', /^a y+ … \[\d+ characters cut\] … y+ z$/);
    const short = toErrorDocument(new CniError(CniCode.requestRejected, 'refused', 'pool nope'), '1.0.0');
    assert.equal(short.details, 'pool nope');
  });
});
