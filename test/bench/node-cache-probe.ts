/**
 * The plugin side of the node cache transport benchmark (node-cache-bench.ts), compiled with
 * Bun like the plugin: read the node cache from a file or from a Unix socket server, validate it
 * with core's decoder, print the timings as one JSON line. Not shipped.
 *
 * Usage: node-cache-probe file|socket|none <path> <clusterUID> <node>
 */
import { readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { decodeNodeCache, cachedPodOf } from 'blockipam/core';

const [mode = 'none', path = '', clusterUID = '', node = ''] = process.argv.slice(2);

function fromSocket(socketPath: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = createConnection(socketPath);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
  });
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const text =
    mode === 'file' || mode === 'parse'
      ? readFileSync(path, 'utf8')
      : mode === 'socket'
        ? await fromSocket(path)
        : '';
  const t1 = performance.now();
  let ok = mode === 'none';
  if (mode === 'parse') ok = typeof JSON.parse(text) === 'object';
  else if (mode !== 'none') {
    const out = decodeNodeCache(text, { clusterUID, node, nowMs: Date.now(), maxAgeMs: 3_600_000 });
    ok = out.ok && cachedPodOf(out.cache, 'ns-2', 'pod-42') !== undefined;
  }
  const t2 = performance.now();
  process.stdout.write(
    `${JSON.stringify({ ok, bytes: text.length, readMs: t1 - t0, decodeMs: t2 - t1, sinceStartMs: t2 })}\n`,
  );
}

void main();
