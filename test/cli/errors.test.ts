// How failures reach the operator: one sentence per kind of failure (cli/errors.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ApiError,
  ConflictError,
  InvalidError,
  NotFoundError,
  TlsError,
  UnavailableError,
} from 'blockipam/core';
import { KubeconfigError } from 'blockipam/core/kube';
import { describeFailure } from '../../cli/errors.ts';
import { CliError } from '../../cli/io.ts';

// Each row: the error, the text expected.
const cases: [string, unknown, RegExp][] = [
  [
    'operator error as is',
    new CliError('--limit must be a whole number'),
    /^--limit must be a whole number$/,
  ],
  [
    'kubeconfig problem as is',
    new KubeconfigError('kubeconfig x: cluster has no server'),
    /^kubeconfig x: cluster has no server$/,
  ],
  [
    'unreachable',
    new UnavailableError('GET /api: API server unreachable: connect ECONNREFUSED'),
    /^cannot reach the Kubernetes API server \(.*ECONNREFUSED\); nothing was changed$/,
  ],
  [
    'CRDs missing',
    new NotFoundError('GET /apis/ipam.blockipam.io/v1alpha1/ipamblocks', '404 page not found'),
    /^the blockipam CRDs are not installed in this cluster \(kubectl apply -f crds\/\)/,
  ],
  [
    'forbidden',
    new ApiError('GET /api/v1/pods: HTTP 403: pods is forbidden', 403),
    /^the API server refused the request: .*forbidden/,
  ],
  [
    'lost race',
    new ConflictError('ippools/p4', 'the object has been modified'),
    /^an object changed while ipamctl was writing it/,
  ],
  [
    'schema refusal',
    new InvalidError('spec.cidr: must be strictly masked', 422),
    /^the API server rejected the object: spec\.cidr/,
  ],
  [
    'http:// against the TLS port',
    new InvalidError('GET /api/v1/nodes: HTTP 400: Client sent an HTTP request to an HTTPS server.', 400),
    /^the kubeconfig's server is http:\/\/ but the API server speaks HTTPS: write https:\/\//,
  ],
  [
    'an untrusted server certificate',
    new TlsError('GET /api: unable to verify the first certificate', 'server'),
    /^no TLS session with the API server: GET \/api: unable to verify the first certificate \(check the kubeconfig's certificate-authority/,
  ],
  ['anything else keeps its name', new TypeError('boom'), /^TypeError: boom$/],
];
for (const [name, error, want] of cases) {
  test(`describeFailure: ${name}`, () => {
    assert.match(describeFailure(error), want);
  });
}
