// The lean Kubernetes transport: kubeconfig / in-cluster loading, HTTP status → typed errors,
// unreachable and hung servers → Unavailable, the request counter. Uses local HTTP servers.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  isAlreadyExists,
  isApiError,
  isConflict,
  isInvalid,
  isNotFound,
  isUnavailable,
} from '../../core/index.ts';
import {
  errorFor,
  inClusterConfig,
  isKubeconfigError,
  KubeTransport,
  loadKubeconfig,
} from '../../core/kube/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'blockipam-kubeconfig-'));
const write = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('loadKubeconfig', () => {
  write('ca.crt', 'CA-PEM');
  write('token', 'file-token\n');
  const path = write(
    'config',
    `apiVersion: v1
kind: Config
current-context: main
clusters:
- name: c1
  cluster: { server: "https://127.0.0.1:6443/", certificate-authority: ca.crt }
- name: c2
  cluster: { server: "https://10.0.0.1", certificate-authority-data: ${Buffer.from('INLINE-CA').toString('base64')}, insecure-skip-tls-verify: true }
users:
- name: u1
  user: { token: static-token }
- name: u2
  user: { tokenFile: token, client-certificate-data: ${Buffer.from('CERT').toString('base64')}, client-key-data: ${Buffer.from('KEY').toString('base64')} }
- name: u3
  user: { exec: { command: aws } }
contexts:
- name: main
  context: { cluster: c1, user: u1 }
- name: other
  context: { cluster: c2, user: u2 }
- name: execy
  context: { cluster: c1, user: u3 }
`,
  );
  it('reads the current context; relative files are relative to the kubeconfig', () => {
    const config = loadKubeconfig(path);
    assert.equal(config.server, 'https://127.0.0.1:6443');
    assert.equal(config.ca?.toString(), 'CA-PEM');
    assert.equal(config.token, 'static-token');
  });
  it('reads a named context with inline data, a token file and insecure-skip-tls-verify', () => {
    const config = loadKubeconfig(path, { context: 'other' });
    assert.deepEqual(
      [
        config.ca?.toString(),
        config.cert?.toString(),
        config.key?.toString(),
        config.tokenFile,
        config.insecureSkipTLSVerify,
      ],
      ['INLINE-CA', 'CERT', 'KEY', join(dir, 'token'), true],
    );
  });
  it('refuses exec credentials, unknown contexts and missing files with KubeconfigError', () => {
    assert.throws(() => loadKubeconfig(path, { context: 'execy' }), isKubeconfigError);
    assert.throws(() => loadKubeconfig(path, { context: 'nope' }), isKubeconfigError);
    assert.throws(() => loadKubeconfig(join(dir, 'missing')), isKubeconfigError);
  });
  it('in-cluster: service host/port, CA and token file', () => {
    write('ca.crt', 'SA-CA');
    const config = inClusterConfig(
      { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      dir,
    );
    assert.deepEqual(
      [config.server, config.ca?.toString(), config.tokenFile],
      ['https://[fd00::1]:443', 'SA-CA', join(dir, 'token')],
    );
    assert.throws(() => inClusterConfig({}, dir), isKubeconfigError);
  });
});

describe('errorFor', () => {
  const status = (reason: string, message = 'msg'): string =>
    JSON.stringify({ kind: 'Status', reason, message, details: { name: 'x', kind: 'ipamblocks' } });
  const cases: [number, string, (e: unknown) => boolean][] = [
    [404, status('NotFound'), isNotFound],
    [409, status('AlreadyExists'), isAlreadyExists],
    [409, status('Conflict'), isConflict],
    [422, status('Invalid', 'spec.cidr: Invalid value'), isInvalid],
    [400, status('BadRequest'), isInvalid],
    [429, status('TooManyRequests'), isUnavailable],
    [503, 'not json', isUnavailable],
    [403, status('Forbidden'), isApiError],
  ];
  for (const [code, body, guard] of cases)
    it(`HTTP ${code} → ${guard.name}`, () => assert.ok(guard(errorFor(code, body, 'GET /x'))));
  it('keeps the API server message', () =>
    assert.match(
      errorFor(422, status('Invalid', 'spec.cidr: Invalid value: "x"'), 'POST').message,
      /spec\.cidr/,
    ));
});

// Both HTTP clients: node:https (Node) and fetch (what the Bun executable uses; under Node's own
// fetch only plain HTTP can be tested here — the TLS side runs in the plugin's tests).
for (const client of ['node', 'fetch'] as const)
  describe(`KubeTransport (${client} client)`, () => {
    let server: http.Server;
    let url = '';
    const seen: { method?: string; url?: string; auth?: string; body: string }[] = [];
    let busyLeft = 0;
    before(async () => {
      server = http.createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, body });
          if (req.url?.startsWith('/hang')) return; // never answers
          if (req.url?.startsWith('/busy-then-ok') && busyLeft > 0) {
            busyLeft -= 1;
            return void res.writeHead(429, { 'retry-after': '0' }).end(
              JSON.stringify({
                kind: 'Status',
                reason: 'TooManyRequests',
                message: 'storage is (re)initializing',
              }),
            );
          }
          if (req.url?.startsWith('/always-busy'))
            return void res
              .writeHead(429, { 'retry-after': '0' })
              .end(JSON.stringify({ kind: 'Status', reason: 'TooManyRequests', message: 'slow down' }));
          if (req.url?.startsWith('/missing'))
            return void res
              .writeHead(404)
              .end(JSON.stringify({ kind: 'Status', reason: 'NotFound', message: 'gone' }));
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true }));
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(() => {
      server.closeAllConnections();
      server.close();
    });

    it('sends JSON with the bearer token and query, counts requests', async () => {
      const api = new KubeTransport({ server: url, token: 't0k' }, { client });
      const got = await api.request<{ ok: boolean }>('POST', '/apis/x', {
        body: { a: 1 },
        query: { labelSelector: 'a=b,c', empty: '' },
      });
      assert.deepEqual(got, { ok: true });
      assert.deepEqual(seen.at(-1), {
        method: 'POST',
        url: '/apis/x?labelSelector=a%3Db%2Cc',
        auth: 'Bearer t0k',
        body: '{"a":1}',
      });
      await assert.rejects(api.request('GET', '/missing'), isNotFound);
      assert.deepEqual(api.stats, { requests: 2, byMethod: { POST: 1, GET: 1 } });
      api.close();
    });
    it('429 (e.g. a new CRD whose storage is initialising) is retried honouring Retry-After', async () => {
      busyLeft = 2;
      const api = new KubeTransport({ server: url }, { client });
      assert.deepEqual(await api.request('GET', '/busy-then-ok'), { ok: true });
      assert.equal(api.stats.requests, 3);
      api.close();
    });
    it('429 that persists → Unavailable after 5 retries', async () => {
      const api = new KubeTransport({ server: url }, { client });
      await assert.rejects(api.request('GET', '/always-busy'), isUnavailable);
      assert.equal(api.stats.requests, 6);
      api.close();
    });
    it('a server that does not answer in time → Unavailable', async () => {
      const api = new KubeTransport({ server: url }, { timeoutMs: 200, client });
      await assert.rejects(api.request('GET', '/hang'), isUnavailable);
      api.close();
    });
    it('connection refused → Unavailable', async () => {
      const closed = http.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const api = new KubeTransport({ server: `https://127.0.0.1:${port}` }, { client });
      await assert.rejects(api.request('GET', '/api'), isUnavailable);
      api.close();
    });
  });
