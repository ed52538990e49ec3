/**
 * A raw client of the node agent's IPAM socket for tests (node:net), where the plugin's client
 * would check what the test means to send wrong: one request per connection, as the protocol
 * has it (docs/design-agent.md §IPAM server).
 */
import { connect } from 'node:net';

/**
 * Sends `payload` on a new connection to `path` — a string or bytes as they are, anything else
 * as its JSON and a newline — ends the client's side, and reads until the server closes.
 * @returns the answer, parsed as JSON
 * @throws (rejects) on a connection error, or when the answer is not JSON (quoting it)
 */
export function askSocket(path: string, payload: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const s = connect(path);
    let answer = '';
    s.on('data', (chunk) => (answer += chunk.toString()));
    s.on('error', reject);
    s.on('end', () => {
      try {
        resolve(JSON.parse(answer) as Record<string, unknown>);
      } catch {
        reject(new Error(`not a JSON answer: ${JSON.stringify(answer)}`));
      }
    });
    s.end(typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : `${JSON.stringify(payload)}\n`);
  });
}
