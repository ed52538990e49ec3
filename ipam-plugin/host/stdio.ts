/**
 * The executable's process I/O, synchronous on purpose. The result must reach the runtime
 * whole before the process exits: Bun's `process.stdout.write(data, callback)` can call back
 * before a pipe has taken more than its 64 KiB buffer (a tester's 106 KB ADD result with 1,024
 * routes arrived cut at 65,536 bytes when the reader was slow, exit code 0), so the executable
 * writes with `writeSync` until every byte is in, waiting out EAGAIN on a non-blocking pipe.
 * Stdin is read with `readSync` up to a bound, so an endless stream (`< /dev/zero`) costs at
 * most that much memory and ends with code 6 instead of growing until the kernel kills it.
 */
import { readSync, writeSync } from 'node:fs';
import { CniCode, CniError } from 'blockipam/core/cni/errors';

/**
 * 64 MiB: a netconf is a few KiB; the largest legitimate input is a GC with every attachment
 * of a node in `cni.dev/valid-attachments` (~100 bytes each: 64 MiB is over half a million).
 */
const maxStdinBytes = 64 * 1024 * 1024;

/** Blocks the thread for `ms` milliseconds (no busy loop). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Writes all of `text` to `fd`. EAGAIN (a non-blocking pipe that is full) is retried after
 * 1 ms.
 * @throws the write error for anything else (EPIPE: the reader has gone; ENOSPC, EBADF, EIO)
 */
export function writeAllSync(fd: number, text: string): void {
  const bytes = Buffer.from(text, 'utf8');
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN') sleepSync(1);
      else throw e;
    }
  }
}

/**
 * Reads `fd` to its end as UTF-8, at most `limit` bytes.
 * @throws CniError 6 (decodeFailure) when the input exceeds `limit` or cannot be read
 *   (e.g. stdin is a directory: EISDIR)
 */
export function readAllSync(fd: number, limit = maxStdinBytes): string {
  const chunks: Buffer[] = [];
  let total = 0;
  const chunk = Buffer.allocUnsafe(1024 * 1024);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, chunk, 0, chunk.length, null);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN') {
        sleepSync(1);
        continue;
      }
      if (code === 'EOF') break;
      throw new CniError(
        CniCode.decodeFailure,
        'cannot read the network configuration from stdin',
        String(e),
      );
    }
    if (n === 0) break;
    total += n;
    if (total > limit)
      throw new CniError(
        CniCode.decodeFailure,
        'network configuration too large',
        `stdin holds more than ${limit} bytes`,
      );
    chunks.push(Buffer.from(chunk.subarray(0, n)));
  }
  return Buffer.concat(chunks, total).toString('utf8');
}
