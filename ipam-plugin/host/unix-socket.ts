/**
 * A Unix stream socket client, as the thin client needs it: connect, write, data until the peer
 * closes. Under Bun (the executable) on Bun's native sockets (`Bun.connect`); under Node (the
 * in-process tests) on node:net. Why two: loading node:net in the Bun executable costs ~7 ms of
 * CPU per call against ~1 ms for Bun.connect (docs/benchmarks.md, "Thin client"), most of the
 * thin client's budget. The same events either way: connect() failures reject with the errno
 * in `code`; after that, `data` per chunk and one `closed` (with the error of a reset).
 */

export interface UnixEvents {
  data(chunk: Uint8Array): void;
  /** The connection ended (peer closed, reset: `error`, or {@link UnixConn.destroy}); called once. */
  closed(error?: Error): void;
}

export interface UnixConn {
  /** Queues `text` (UTF-8) for sending; what the kernel does not take now goes on drain. */
  write(text: string): void;
  /** Closes the connection; no event follows. */
  destroy(): void;
}

/** A connect() failure: `code` is the errno name (ENOENT, ECONNREFUSED …). */
export type ConnectError = Error & { code?: string };

/** The part of Bun's socket API used here (bun.sh/docs/api/tcp, `unix` option). */
interface BunSocket {
  write(data: Uint8Array): number;
  end(): void;
}
interface BunLike {
  connect(o: {
    unix: string;
    socket: {
      open?(s: BunSocket): void;
      data(s: BunSocket, d: Uint8Array): void;
      drain?(s: BunSocket): void;
      close?(s: BunSocket, error?: Error): void;
      end?(s: BunSocket): void;
      error?(s: BunSocket, e: Error): void;
      connectError?(s: BunSocket, e: Error): void;
    };
  }): Promise<BunSocket>;
}

/**
 * Connects to the socket at `path`.
 * @throws ConnectError (with `code`) when connect() fails
 */
export function connectUnix(path: string, events: UnixEvents): Promise<UnixConn> {
  const bun = (globalThis as { Bun?: BunLike }).Bun;
  return bun ? connectBun(bun, path, events) : connectNode(path, events);
}

async function connectBun(bun: BunLike, path: string, events: UnixEvents): Promise<UnixConn> {
  let ended = false;
  let pending = new Uint8Array(0);
  const end = (error?: Error): void => {
    if (ended) return;
    ended = true;
    events.closed(error);
  };
  const flush = (s: BunSocket): void => {
    if (pending.length === 0) return;
    const n = s.write(pending);
    pending = pending.subarray(Math.max(0, n));
  };
  const socket = await bun.connect({
    unix: path,
    socket: {
      data: (_s, d) => {
        if (!ended) events.data(d);
      },
      drain: flush,
      end: () => end(),
      close: (_s, error) => end(error),
      error: (_s, e) => end(e),
    },
  });
  return {
    write(text) {
      pending = new TextEncoder().encode(text);
      flush(socket);
    },
    destroy() {
      ended = true;
      socket.end();
    },
  };
}

function connectNode(path: string, events: UnixEvents): Promise<UnixConn> {
  const net = process.getBuiltinModule('node:net');
  return new Promise((resolve, reject) => {
    const socket = net.connect({ path });
    let open = false;
    let ended = false;
    const end = (error?: Error): void => {
      if (ended) return;
      ended = true;
      events.closed(error);
    };
    socket.on('error', (e) => {
      if (open) end(e);
      else reject(e);
    });
    socket.once('connect', () => {
      open = true;
      socket.on('data', (d: Buffer) => {
        if (!ended) events.data(d);
      });
      socket.on('end', () => end());
      socket.on('close', () => end());
      resolve({
        write: (text) => void socket.write(text),
        destroy() {
          ended = true;
          socket.destroy();
        },
      });
    });
  });
}
