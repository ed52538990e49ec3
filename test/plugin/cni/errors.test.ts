/** API failures mapped to documented CNI codes on core's error kinds (105 credentials/TLS, 106 rejected as invalid or not JSON); the error document's details cut to MAX_DETAILS. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, DecodeError, InvalidError, TlsError } from 'blockipam/core';
import { apiFailure } from '../../../ipam-plugin/backend/api-failure.ts';
import { CniCode, CniError, MAX_DETAILS, toErrorDocument } from '../../../ipam-plugin/cni/errors.ts';

void describe('apiFailure', () => {
  void it('API 422 → 106 (short message); 401/403 and untrusted TLS → 105', () => {
    const e422 = apiFailure(new InvalidError(`Pod "${'a'.repeat(5000)}" is invalid`, 422));
    assert.equal(e422?.code, 106);
    assert.ok((e422?.details.length ?? 0) < 400);
    assert.equal(apiFailure(new ApiError('GET /x: HTTP 401: Unauthorized', 401))?.code, 105);
    assert.equal(apiFailure(new ApiError('GET /x: HTTP 403: forbidden', 403))?.code, 105);
    // untrusted TLS arrives as core's TlsError (the transport classifies it; no message regex here)
    assert.equal(
      apiFailure(new TlsError('GET /x: self-signed certificate in certificate chain', 'server'))?.code,
      105,
    );
    assert.equal(apiFailure(new DecodeError('GET /x: HTTP 200 answer is not JSON', 200))?.code, 106);
    assert.equal(apiFailure(new ApiError('GET /x: HTTP 405: nope', 405)), undefined);
  });
});

void describe('toErrorDocument', () => {
  void it('cuts details to MAX_DETAILS characters, saying how many more the log holds', () => {
    const long = toErrorDocument(
      new CniError(CniCode.requestRejected, 'refused', `pool ${'x'.repeat(200_000)}`),
      '1.0.0',
    );
    assert.ok((long.details?.length ?? 0) < MAX_DETAILS + 80, String(long.details?.length));
    assert.match(long.details ?? '', /… \(\d+ more characters in the plugin's log\)$/);
    const short = toErrorDocument(new CniError(CniCode.requestRejected, 'refused', 'pool nope'), '1.0.0');
    assert.equal(short.details, 'pool nope');
  });
});
