// The transport's failure kinds, on both HTTP clients: a 2xx answer that is not JSON is a
// DecodeError naming the request (not a raw SyntaxError). Local plain-HTTP servers.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { isApiError, isDecodeError } from 'blockipam/core';
import { KubeTransport } from 'blockipam/core/kube';

const loginPage = '<!DOCTYPE html>\n<html><head><title>Proxy login</title></head><body>sign in</body></html>';

for (const client of ['node', 'fetch'] as const)
  describe(`KubeTransport failure kinds (${client} client)`, () => {
    let server: http.Server;
    let url = '';
    before(async () => {
      server = http.createServer((req, res) => {
        if (req.url?.startsWith('/truncated'))
          return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"items": [');
        res.writeHead(200, { 'content-type': 'text/html' }).end(loginPage);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
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
        await assert.rejects(api.request('GET', path), (e: Error & { status?: number }) => {
          assert.ok(isDecodeError(e), `${e.name}: ${e.message}`);
          assert.ok(isApiError(e), 'a refinement of ApiError');
          assert.equal(e.status, 200);
          assert.ok(e.message.startsWith(`GET ${path}: HTTP 200 answer is not JSON`), e.message);
          assert.ok(e.cause instanceof SyntaxError, 'the parse error is the cause');
          return true;
        });
        api.close();
      });
  });
