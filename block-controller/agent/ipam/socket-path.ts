/**
 * The IPAM socket's place on the host (docs/design-agent.md §IPAM server): a root-owned 0700
 * directory, and in it the socket, 0600 from the moment it exists. Only root — the container
 * runtime calling the plugin — may connect: the socket hands out and frees addresses.
 */
import { chmodSync, chownSync, lstatSync, mkdirSync, unlinkSync } from 'node:fs';
import { connect, type Server } from 'node:net';
import { dirname } from 'node:path';

/** The socket's default path (the chart mounts /var/run/blockipam from the host). */
export const DEFAULT_IPAM_SOCKET = '/var/run/blockipam/agent/ipam.sock';

/** The directory's mode: root only. */
const SOCKET_DIR_MODE = 0o700;
/** The socket's mode: root only. */
const SOCKET_MODE = 0o600;
// 0o177: a socket bound under it is created 0600 (srw-------), so there is no moment between
// bind and chmod in which anyone else could connect.
const SOCKET_UMASK = 0o177;

/**
 * Creates the socket's directory (and missing parents) owned by this process's user, mode 0700,
 * or brings an existing one to that (chown, chmod).
 * @throws Error naming the directory when it is not a directory (a symlink, a file) or cannot be
 *   brought to this owner and mode
 */
export function prepareSocketDir(socketPath: string): void {
  const dir = dirname(socketPath);
  mkdirSync(dir, { recursive: true, mode: SOCKET_DIR_MODE });
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  const refuse = (why: string): never => {
    throw new Error(`IPAM socket directory ${dir}: ${why}; refusing to serve IPAM there`);
  };
  let st = lstatSync(dir);
  if (!st.isDirectory()) refuse('not a directory (a symlink or a file)');
  try {
    if (st.uid !== uid || st.gid !== gid) chownSync(dir, uid, gid);
    if ((st.mode & 0o777) !== SOCKET_DIR_MODE) chmodSync(dir, SOCKET_DIR_MODE);
  } catch (error) {
    refuse(
      `owned by ${st.uid}:${st.gid} with mode ${octal(st.mode)}, cannot fix (${(error as Error).message})`,
    );
  }
  st = lstatSync(dir);
  if (st.uid !== uid || (st.mode & 0o777) !== SOCKET_DIR_MODE)
    refuse(`owned by ${st.uid} with mode ${octal(st.mode)}, wanted ${uid} and ${octal(SOCKET_DIR_MODE)}`);
}

/**
 * Removes a stale socket left by an agent that died; refuses a live one (another agent serving
 * this node) and anything that is not a socket.
 * @throws Error naming the path
 */
export async function removeStaleSocket(socketPath: string): Promise<void> {
  let st;
  try {
    st = lstatSync(socketPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (!st.isSocket())
    throw new Error(`IPAM socket ${socketPath}: exists and is not a socket; not removing it`);
  if (await accepts(socketPath))
    throw new Error(
      `IPAM socket ${socketPath}: another process is serving it (a second agent on this node?)`,
    );
  unlinkSync(socketPath);
}

/** Listens on `socketPath` created 0600 (umask around the bind), then checks the mode. */
export async function listenRootOnly(server: Server, socketPath: string): Promise<void> {
  const listening = new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  // listen() binds synchronously for a path (libuv uv_pipe_bind): the umask covers the bind.
  const umask = process.umask(SOCKET_UMASK);
  try {
    server.listen(socketPath);
  } finally {
    process.umask(umask);
  }
  await listening;
  chmodSync(socketPath, SOCKET_MODE);
}

function accepts(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8)}`;
}
