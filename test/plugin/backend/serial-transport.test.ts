/**
 * ipam-plugin/serial-transport.ts against a local HTTP server: concurrent callers' requests go
 * out one at a time over one keep-alive connection, each caller gets its own answer; an HTTP
 * error fails only its own request; a connection failure fails the queued ones unsent.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { SerialTransport } from '../../../ipam-plugin/backend/serial-transport.ts';

let inFlight = 0;
let maxInFlight = 0;
let connections = 0;
let received = 0;
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  received += 1;
  if (req.url === '/reset') {
    req.socket.destroy();
    return;
  }
  inFlight += 1;
  maxInFlight = Math.max(maxInFlight, inFlight);
  setTimeout(() => {
    inFlight -= 1;
    const status = req.url?.includes('missing') ? 404 : 200;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(status === 200 ? { path: req.url } : { message: 'not found', reason: 'NotFound' }),
    );
  }, 20);
});
server.on('connection', () => (connections += 1));
let url = '';

before(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

void describe('SerialTransport', () => {
  void it('sends concurrent requests one at a time over one connection, in call order', async () => {
    const t = new SerialTransport({ server: url });
    const [a, b, c] = await Promise.all([
      t.request<{ path: string }>('GET', '/a'),
      t.request<{ path: string }>('GET', '/b'),
      t.request<{ path: string }>('GET', '/c'),
    ]);
    assert.deepEqual([a.path, b.path, c.path], ['/a', '/b', '/c']);
    assert.equal(maxInFlight, 1);
    assert.equal(connections, 1);
    assert.equal(t.stats.requests, 3);
    t.close();
  });

  void it('a failed request rejects alone; the next one is still sent', async () => {
    const t = new SerialTransport({ server: url });
    const missing = t.request('GET', '/missing');
    const next = t.request<{ path: string }>('GET', '/after');
    await assert.rejects(missing, (e: Error) => e.name === 'NotFoundError');
    assert.equal((await next).path, '/after');
    t.close();
  });

  void it('after a connection failure the queued requests fail unsent with the same error', async () => {
    const t = new SerialTransport({ server: url });
    const before = received;
    const reset = t.request('GET', '/reset');
    const queued = t.request('GET', '/never');
    await assert.rejects(reset, (e: Error) => e.name === 'UnavailableError');
    await assert.rejects(queued, (e: Error) => e.name === 'UnavailableError');
    assert.equal(received - before, 1, 'the queued request was not sent');
    t.close();
  });
});
