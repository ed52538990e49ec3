// The lean Kubernetes transport: kubeconfig / in-cluster loading, HTTP status → typed errors,
// unreachable and hung servers → Unavailable, the request counter. Uses local HTTP servers.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, mock } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  isAlreadyExists,
  isApiError,
  isExpired,
  isConflict,
  isInvalid,
  isNotFound,
  isUnavailable,
} from 'blockipam/core';
import { errorFor, isKubeconfigError, KubeTransport } from 'blockipam/core/kube';
import { inClusterConfig, loadKubeconfig } from 'blockipam/core/kubeconfig';

const dir = mkdtempSync(join(tmpdir(), 'blockipam-kubeconfig-'));
// Removed at exit whatever the outcome (a failed assertion or hook included): the key material
// in it was left in /tmp by every run (test/helpers/tmp-leftovers.test.ts checks).
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
// For the timeout cases: requests must fail with Unavailable within about timeoutMs; the bound
// is generous (a behaviour bound, not a benchmark) but far below "never".
const TIMEOUT_MS = 300;
const BOUND_MS = 5 * TIMEOUT_MS;
const write = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

/** Runs openssl in `dir`; throws with its stderr on failure. */
function openssl(...args: string[]): void {
  const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}
// Real PEM material: loadKubeconfig refuses what cannot be used (core/kube/tls-material.ts).
// `${name}.key` + `${name}.crt`, self-signed, or signed by ca.crt when `signed`.
function keyAndCert(name: string, cn: string, signed = false): void {
  const key = `-newkey rsa:2048 -nodes -keyout ${name}.key -subj /CN=${cn}`.split(' ');
  if (!signed) return openssl('req', '-x509', ...key, '-out', `${name}.crt`, '-days', '1');
  openssl('req', ...key, '-out', `${name}.csr`);
  openssl(
    ...`x509 -req -in ${name}.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -out ${name}.crt`.split(
      ' ',
    ),
  );
}
keyAndCert('ca', 'test-ca');
keyAndCert('client', 'client', true);
keyAndCert('other', 'other');
openssl(...'x509 -in ca.crt -outform DER -out ca.der'.split(' '));
/** A kubeconfig of one context `x` (cluster `c`: `server` and `cluster`'s items, user `u`). */
const oneContext = (file: string, cluster: string, user: string): string =>
  write(
    file,
    `clusters: [{ name: c, cluster: { ${cluster} } }]
users: [{ name: u, user: ${user} }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`,
  );
const pem = (name: string): string => readFileSync(join(dir, name), 'utf8');
const b64 = (name: string): string => readFileSync(join(dir, name)).toString('base64');

describe('loadKubeconfig', () => {
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
  cluster: { server: "https://10.0.0.1", certificate-authority-data: ${b64('ca.crt')}, insecure-skip-tls-verify: true }
users:
- name: u1
  user: { token: static-token }
- name: u2
  user: { tokenFile: token, client-certificate-data: ${b64('client.crt')}, client-key-data: ${b64('client.key')} }
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
    assert.equal(config.ca?.toString(), pem('ca.crt'));
    assert.deepEqual(config.files, [join(dir, 'ca.crt')]);
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
      [pem('ca.crt'), pem('client.crt'), pem('client.key'), join(dir, 'token'), true],
    );
  });
  // TLS material that cannot work is refused at load, naming the item (tester: Bun said
  // "typo in the url", Node "DECODER routines::unsupported" or sent no client certificate).
  const tlsCases: [title: string, cluster: string, user: string, names: RegExp][] = [
    ['a DER CA', `certificate-authority: ca.der`, '{ token: t }', /certificate-authority data is not PEM/],
    [
      'a CA that is not a certificate',
      `certificate-authority-data: ${Buffer.from('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n').toString('base64')}`,
      '{ token: t }',
      /certificate-authority data cannot be used/,
    ],
    [
      'a garbage key',
      `certificate-authority: ca.crt`,
      `{ client-certificate: client.crt, client-key-data: ${Buffer.from('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n').toString('base64')} }`,
      /client-key data cannot be used/,
    ],
    [
      'a certificate without its key',
      `certificate-authority: ca.crt`,
      '{ client-certificate: client.crt }',
      /without client-key/,
    ],
    [
      'a key of another certificate',
      `certificate-authority: ca.crt`,
      '{ client-certificate: client.crt, client-key: other.key }',
      /does not belong to the client-certificate/,
    ],
  ];
  for (const [title, cluster, user, names] of tlsCases)
    it(`refuses ${title} with KubeconfigError naming the item`, () => {
      const config = oneContext(
        `config-tls-${title.replaceAll(' ', '-')}`,
        `server: "https://127.0.0.1:6443", ${cluster}`,
        user,
      );
      assert.throws(
        () => loadKubeconfig(config),
        (e: unknown) => isKubeconfigError(e) && names.test(e.message),
      );
    });
  for (const server of ['not a url', 'ftp://127.0.0.1', '127.0.0.1:6443'])
    it(`a server ${JSON.stringify(server)} → KubeconfigError naming clusters[].cluster.server`, () => {
      const config = oneContext(
        `config-server-${server.replace(/[^a-z0-9]/g, '-')}`,
        `server: ${JSON.stringify(server)}`,
        '{ token: t }',
      );
      assert.throws(
        () => loadKubeconfig(config),
        (e: unknown) =>
          isKubeconfigError(e) &&
          /clusters\[\]\.cluster\.server of cluster c is not an https/.test(e.message),
      );
    });
  it('refuses exec credentials, unknown contexts and missing files with KubeconfigError', () => {
    assert.throws(() => loadKubeconfig(path, { context: 'execy' }), isKubeconfigError);
    assert.throws(() => loadKubeconfig(path, { context: 'nope' }), isKubeconfigError);
    assert.throws(() => loadKubeconfig(join(dir, 'missing')), isKubeconfigError);
  });
  // A file the kubeconfig names but the node agent has not written yet: KubeconfigError (the
  // plugin's code 11), naming the field and the resolved path — not a raw ENOENT.
  const missingFileCases: [field: string, where: 'cluster' | 'user'][] = [
    ['certificate-authority', 'cluster'],
    ['client-certificate', 'user'],
    ['client-key', 'user'],
  ];
  for (const [field, where] of missingFileCases)
    it(`a missing ${field} file → KubeconfigError naming ${field} and the path`, () => {
      const cluster = where === 'cluster' ? `, ${field}: not-yet/${field}.pem` : '';
      const user = where === 'user' ? `{ ${field}: not-yet/${field}.pem }` : '{ token: t }';
      const config = oneContext(
        `config-missing-${field}`,
        `server: "https://127.0.0.1:6443"${cluster}`,
        user,
      );
      const path = join(dir, 'not-yet', `${field}.pem`);
      assert.throws(
        () => loadKubeconfig(config),
        (e: unknown) =>
          isKubeconfigError(e) && e.message.includes(`${field} ${path}`) && e.message.includes('ENOENT'),
      );
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
    [410, status('Expired', 'The provided continue parameter is too old'), isExpired],
    [403, status('Forbidden'), isApiError],
  ];
  for (const [code, body, guard] of cases)
    it(`HTTP ${code} → ${guard.name}`, () => assert.ok(guard(errorFor(code, body, 'GET /x'))));
  // the plugin's guard relies on it (ipam-plugin/backend/core-backend.ts): no ApiError of a 5xx
  it('every 5xx is UnavailableError, never ApiError', () => {
    for (let code = 500; code < 600; code++) {
      const error = errorFor(code, status('InternalError'), 'GET /x');
      assert.ok(isUnavailable(error) && !isApiError(error), String(code));
    }
  });
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
          if (req.url?.startsWith('/trickle-body')) {
            // headers at once, then one body byte every 50 ms, forever
            res.writeHead(200, { 'content-type': 'application/json' }).flushHeaders();
            return trickle(res, () => res.write(' '));
          }
          if (req.url?.startsWith('/trickle-headers')) {
            // a status line, then one header byte every 50 ms, forever (written on the socket)
            req.socket.write('HTTP/1.1 200 OK\r\nX-Slow: ');
            return trickle(res, () => req.socket.write('a'));
          }
          const busy =
            req.url?.startsWith('/always-busy') || (req.url?.startsWith('/busy-then-ok') && busyLeft-- > 0);
          const missing = req.url?.startsWith('/missing');
          if (busy || missing) {
            const reason = busy ? 'TooManyRequests' : 'NotFound';
            return void res
              .writeHead(busy ? 429 : 404, busy ? { 'retry-after': '0' } : {})
              .end(JSON.stringify({ kind: 'Status', reason, message: 'slow down or gone' }));
          }
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
    // Headers then a body trickling forever, headers trickling forever: each Unavailable within
    // about timeoutMs (no answer at all: kube-transport-failures.test.ts).
    for (const path of ['/trickle-body', '/trickle-headers'])
      it(`${path} → Unavailable within about timeoutMs`, async () => {
        const api = new KubeTransport({ server: url }, { timeoutMs: TIMEOUT_MS, client });
        const outcome = await settledWithin(api.request('GET', path), BOUND_MS);
        assert.ok(isUnavailable(outcome.error), `expected Unavailable, got ${JSON.stringify(outcome)}`);
        api.close();
      });
    it('a TLS handshake that never completes → Unavailable after one timeoutMs, not two', async () => {
      // The server accepts TCP and never answers the ClientHello. Node's socket idle timeout
      // skips its first expiry while a write (the request, queued behind the handshake) is
      // pending, so an idle timer alone fired at 2 × timeoutMs here; the bound sits below that.
      const sockets = new Set<net.Socket>();
      const mute = net.createServer((socket) => {
        sockets.add(socket);
        socket.resume();
      });
      await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
      const port = (mute.address() as AddressInfo).port;
      const api = new KubeTransport({ server: `https://127.0.0.1:${port}` }, { timeoutMs: 600, client });
      const started = performance.now();
      const outcome = await settledWithin(api.request('GET', '/api'), 3_000);
      const elapsedMs = performance.now() - started;
      api.close();
      for (const socket of sockets) socket.destroy();
      mute.close();
      assert.ok(isUnavailable(outcome.error), `expected Unavailable, got ${JSON.stringify(outcome)}`);
      assert.ok((outcome.error as Error).cause !== undefined, 'carries the socket error as its cause');
      assert.ok(elapsedMs < 1.75 * 600, `took ${Math.round(elapsedMs)} ms`);
    });
    it('a tokenFile that cannot be read → KubeconfigError naming tokenFile, nothing sent', async () => {
      const tokenFile = join(dir, 'not-yet', 'token');
      const api = new KubeTransport({ server: url, tokenFile }, { client });
      const before = seen.length;
      await assert.rejects(
        api.request('GET', '/apis/x'),
        (e: unknown) => isKubeconfigError(e) && e.message.includes(`tokenFile ${tokenFile}`),
      );
      assert.equal(seen.length, before);
      api.close();
    });
    it('the tokenFile is re-read after 60 s; a failed re-read keeps the token read before', async () => {
      const tokenFile = write(`token-${client}`, 'first\n');
      mock.timers.enable({ apis: ['Date'], now: Date.now() });
      try {
        const api = new KubeTransport({ server: url, tokenFile }, { client });
        await api.request('GET', '/apis/x');
        rmSync(tokenFile);
        mock.timers.tick(61_000);
        await api.request('GET', '/apis/x'); // re-read fails (client-go: "Unable to rotate token")
        writeFileSync(tokenFile, 'second\n');
        await api.request('GET', '/apis/x'); // retried on the next request
        assert.deepEqual(
          seen.slice(-3).map((r) => r.auth),
          ['Bearer first', 'Bearer first', 'Bearer second'],
        );
        api.close();
      } finally {
        mock.timers.reset();
      }
    });
  });

/** Calls `step` every 50 ms until the response's connection closes. */
function trickle(res: http.ServerResponse, step: () => void): void {
  const timer = setInterval(step, 50);
  res.on('close', () => clearInterval(timer));
}

/**
 * The promise's outcome, or `{ pending: true }` when it has not settled after `boundMs` (so a
 * request that never times out fails the test instead of hanging it).
 */
async function settledWithin(
  promise: Promise<unknown>,
  boundMs: number,
): Promise<{ value?: unknown; error?: unknown; pending?: true }> {
  const abort = new AbortController();
  try {
    return await Promise.race([
      promise.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      sleep(boundMs, { pending: true as const }, { signal: abort.signal }),
    ]);
  } finally {
    abort.abort();
  }
}
