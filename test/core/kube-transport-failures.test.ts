// The transport's failure kinds (core/errors): a 2xx answer that is not JSON is a DecodeError, an
// expired deadline a RequestTimeoutError, a refused connection an UnavailableError, an untrusted
// server certificate a TlsError, a proxy refusing the tunnel (Bun's fetch: the plugin's runtime)
// a ProxyError — each naming the request and carrying its cause. Local servers only.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  isApiError,
  isDecodeError,
  isProxyError,
  isRequestTimeout,
  isTlsError,
  isUnavailable,
} from 'blockipam/core';
import { KubeTransport } from 'blockipam/core/kube';

const repoRoot = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'blockipam-transport-failures-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const loginPage = '<!DOCTYPE html>\n<html><head><title>Proxy login</title></head><body>sign in</body></html>';
type Kinded = Error & { status?: number; timeoutMs?: number; origin?: string };

const listen = async (server: net.Server): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

for (const client of ['node', 'fetch'] as const)
  describe(`KubeTransport failure kinds (${client} client)`, () => {
    let server: http.Server;
    let url = '';
    before(async () => {
      server = http.createServer((req, res) => {
        if (req.url?.startsWith('/hang')) return; // never answers
        if (req.url?.startsWith('/truncated'))
          return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"items": [');
        res.writeHead(200, { 'content-type': 'text/html' }).end(loginPage);
      });
      url = `http://127.0.0.1:${await listen(server)}`;
    });
    after(() => {
      server.closeAllConnections();
      server.close();
    });

    const cases: [string, string][] = [
      ['an HTML page (a proxy login)', '/apis/ipam.blockipam.io/v1alpha1/ipamblocks'],
      ['a truncated JSON body', '/truncated/x'],
    ];
    for (const [title, path] of cases)
      it(`2xx with ${title} → DecodeError naming the request, status and the body's start`, async () => {
        const api = new KubeTransport({ server: url }, { client });
        await assert.rejects(api.request('GET', path), (e: Kinded) => {
          assert.ok(isDecodeError(e), `${e.name}: ${e.message}`);
          assert.ok(isApiError(e), 'a refinement of ApiError');
          assert.equal(e.status, 200);
          assert.ok(e.message.startsWith(`GET ${path}: HTTP 200 answer is not JSON`), e.message);
          assert.ok(e.cause instanceof SyntaxError, 'the parse error is the cause');
          return true;
        });
        api.close();
      });

    it('no answer within timeoutMs → RequestTimeoutError (an UnavailableError) carrying timeoutMs', async () => {
      const api = new KubeTransport({ server: url }, { client, timeoutMs: 200 });
      await assert.rejects(api.request('GET', '/hang'), (e: Kinded) => {
        assert.ok(isRequestTimeout(e), `${e.name}: ${e.message}`);
        assert.ok(isUnavailable(e), 'transient');
        assert.equal(e.timeoutMs, 200);
        assert.match(e.message, /^GET \/hang: /);
        assert.ok(e.cause instanceof Error);
        return true;
      });
      api.close();
    });

    it('connection refused → UnavailableError, not a timeout, with the socket error as cause', async () => {
      const closed = net.createServer();
      const port = await listen(closed);
      await new Promise((resolve) => closed.close(resolve));
      const api = new KubeTransport({ server: `http://127.0.0.1:${port}` }, { client });
      await assert.rejects(api.request('GET', '/api'), (e: Kinded) => {
        assert.ok(isUnavailable(e) && !isRequestTimeout(e) && !isProxyError(e), `${e.name}: ${e.message}`);
        assert.equal(e.name, 'UnavailableError');
        assert.ok(e.cause instanceof Error);
        return true;
      });
      api.close();
    });
  });

describe('KubeTransport TLS failure kind (node client)', () => {
  let server: https.Server;
  let port = 0;
  before(async () => {
    const r = spawnSync(
      'openssl',
      `req -x509 -newkey rsa:2048 -nodes -keyout ${dir}/s.key -out ${dir}/s.crt -subj /CN=localhost -days 1`.split(
        ' ',
      ),
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    server = https.createServer(
      { key: readFileSync(`${dir}/s.key`), cert: readFileSync(`${dir}/s.crt`) },
      (_q, res) => res.end('{}'),
    );
    port = await listen(server);
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('a server certificate nobody trusts → TlsError, origin server (an ApiError with status 0)', async () => {
    const api = new KubeTransport({ server: `https://127.0.0.1:${port}` }, { client: 'node' });
    await assert.rejects(api.request('GET', '/api'), (e: Kinded) => {
      assert.ok(isTlsError(e), `${e.name}: ${e.message}`);
      assert.equal(e.origin, 'server');
      assert.ok(isApiError(e) && e.status === 0);
      assert.equal(isUnavailable(e), false, 'not transient');
      assert.match(e.message, /^GET \/api: /);
      return true;
    });
    api.close();
  });
  it('the same server with its certificate as CA → answers', async () => {
    const api = new KubeTransport(
      { server: `https://localhost:${port}`, ca: readFileSync(`${dir}/s.crt`) },
      { client: 'node' },
    );
    assert.deepEqual(await api.request('GET', '/api'), {});
    api.close();
  });
});

describe("ProxyError under Bun's fetch (the plugin's runtime)", () => {
  let proxy: net.Server;
  let port = 0;
  before(async () => {
    // answers every CONNECT with 407, as a proxy wanting credentials does
    proxy = net.createServer((socket) => {
      socket.on('error', () => undefined); // the client may reset after the answer
      socket.once('data', () =>
        socket.end('HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n'),
      );
    });
    port = await listen(proxy);
  });
  after(() => proxy.close());

  it('a proxy from HTTPS_PROXY refusing the tunnel → ProxyError naming the proxy (an UnavailableError)', async () => {
    const script = join(dir, 'proxy.ts');
    writeFileSync(
      script,
      [
        `import { KubeTransport } from ${JSON.stringify(join(repoRoot, 'core', 'kube', 'index.ts'))};`,
        // a name that is never resolved: the request goes to the proxy on loopback only
        "const api = new KubeTransport({ server: 'https://api.cluster.invalid:6443', insecureSkipTLSVerify: true }, { timeoutMs: 5000 });",
        "api.request('GET', '/api').then(() => console.log('{}'), (e) => console.log(JSON.stringify({ name: e.name, message: e.message, unavailable: e instanceof Error && ['UnavailableError', 'ProxyError'].includes(e.name) })));",
      ].join('\n'),
    );
    // spawned asynchronously: the proxy answers from this process
    const child = spawn(join(repoRoot, 'node_modules', '.bin', 'bun'), ['--no-install', script], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, HTTPS_PROXY: `http://user:secret@127.0.0.1:${port}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const [status] = (await once(child, 'close')) as [number | null];
    const r = { status, stdout };
    assert.equal(r.status, 0);
    const got = JSON.parse(r.stdout) as { name: string; message: string; unavailable: boolean };
    assert.equal(got.name, 'ProxyError', got.message);
    assert.ok(got.unavailable);
    assert.match(
      got.message,
      new RegExp(`^GET /api: .*proxy http://127\\.0\\.0\\.1:${port} from HTTPS_PROXY`),
    );
    assert.doesNotMatch(got.message, /secret/, 'proxy credentials are never repeated');
  });
});
