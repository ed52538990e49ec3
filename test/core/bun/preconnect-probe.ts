/**
 * Run with Bun by kube-preconnect.test.ts: `bun preconnect-probe.ts URL true|false` builds a
 * KubeTransport on fetch with that `preconnect`, prints "ready", waits 300 ms, sends one GET
 * and prints "done".
 */
import { KubeTransport } from 'blockipam/core/kube';

const [server, preconnect] = process.argv.slice(2);
const api = new KubeTransport(
  { server: server! },
  { client: 'fetch', timeoutMs: 5000, preconnect: preconnect === 'true' },
);
console.log('ready');
await new Promise((r) => setTimeout(r, 300));
await api.request('GET', '/api');
console.log('done');
