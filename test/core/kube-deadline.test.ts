// The transport's request deadline (core/kube/deadline.ts): it fires after timeoutMs while the
// process runs, but a timer that fires late — the thread was blocked (as in the host lock's
// flock) or starved — first gives pending I/O another turn, so an answer that arrived meanwhile
// is read, not reported as "no answer".
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { runnableDeadline } from '../../core/kube/deadline.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Blocks this thread for `ms` (no timer or I/O callback runs meanwhile). */
const block = (ms: number): void => void Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

void describe('runnableDeadline', () => {
  void it('aborts with a TimeoutError after timeoutMs while the process runs, not before', async () => {
    const { signal } = runnableDeadline(200);
    await sleep(100);
    assert.equal(signal.aborted, false);
    await sleep(400);
    assert.equal(signal.aborted, true);
    assert.equal((signal.reason as Error).name, 'TimeoutError');
  });

  void it('a timer due while the thread was blocked gives the answer that arrived meanwhile its turn first', async () => {
    // An "answer": a child's output that reaches the pipe while this thread is blocked past the
    // deadline. Node runs due timers before it polls I/O, so a plain timeout aborts first.
    const child = spawn('sh', ['-c', 'sleep 0.05; echo answer'], { stdio: ['ignore', 'pipe', 'ignore'] });
    await once(child, 'spawn');
    const { signal } = runnableDeadline(100);
    let answered: boolean | undefined;
    child.stdout.once('data', () => (answered = !signal.aborted));
    block(400);
    await sleep(20);
    assert.equal(answered, true, 'the answer was handled before any abort');
    assert.equal(signal.aborted, false, 'the late timer re-armed instead of aborting');
    // Re-armed once, for the time it was late (~300 ms, at most timeoutMs = 100): then it aborts.
    await sleep(400);
    assert.equal(signal.aborted, true);
  });

  void it('clear() stops it: the signal is never aborted', async () => {
    const deadline = runnableDeadline(50);
    deadline.clear();
    await sleep(150);
    assert.equal(deadline.signal.aborted, false);
  });

  void it("a timeout past setTimeout's 2^31 ms limit does not fire at once", async () => {
    const deadline = runnableDeadline(2 ** 33);
    await sleep(50);
    assert.equal(deadline.signal.aborted, false);
    deadline.clear();
  });

  void it('is late only once: a second blocked stretch aborts when its timer runs', async () => {
    const { signal } = runnableDeadline(100);
    block(300);
    await sleep(10);
    assert.equal(signal.aborted, false);
    block(300);
    await sleep(10);
    assert.equal(signal.aborted, true);
  });
});
