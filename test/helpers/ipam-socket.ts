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

/** Node `n1`'s netconf for socket tests (ipam fields merged in). */
export function socketConf(
  ipam: Record<string, unknown> = {},
  cniVersion = '1.0.0',
): Record<string, unknown> {
  return { cniVersion, name: 'n', type: 'ptp', ipam: { type: 'blockipam', nodeName: 'n1', ...ipam } };
}

/**
 * A protocol v2 request: `command` with the CNI_* variables an ADD, DEL or CHECK needs (container
 * `c`, eth0; `env` merged in) and `conf` as stdin (a string as it is, else its JSON).
 */
export function cniCall(
  command: string,
  conf: unknown = socketConf(),
  env: Record<string, string> = {},
): { v: 2; env: Record<string, string>; stdin: string } {
  const attachment: Record<string, string> = ['ADD', 'DEL', 'CHECK'].includes(command)
    ? { CNI_CONTAINERID: 'c', CNI_NETNS: '/var/run/netns/c', CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin' }
    : {};
  return {
    v: 2,
    env: { CNI_COMMAND: command, ...attachment, ...env },
    stdin: typeof conf === 'string' ? conf : JSON.stringify(conf),
  };
}

/** The CNI document in an answer's stdout (result or error), or undefined when stdout is empty. */
export function answerDoc(answer: Record<string, unknown>): Record<string, unknown> | undefined {
  const out = answer.stdout;
  if (typeof out !== 'string' || out === '') return undefined;
  return JSON.parse(out) as Record<string, unknown>;
}
