/**
 * A node:test reporter for scripts/run-tests.ts: one line per skipped or todo test or suite,
 * `file:line name: skipped (reason)`, and nothing else. A skip reports as passed, so the launcher
 * fails a run that has any (test/helpers/tier.ts: tests never skip; a missing prerequisite fails).
 */
import { relative } from 'node:path';
import type { TestEvent } from 'node:test/reporters';

export default async function* skips(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { name, file, line, skip, todo } = event.data;
    const [kind, reason] = skip !== undefined && skip !== false ? ['skipped', skip] : ['todo', todo];
    if (reason === undefined || reason === false) continue;
    yield `${file === undefined ? '?' : relative(process.cwd(), file)}:${line ?? '?'} ${name}: ${kind}${typeof reason === 'string' ? ` (${reason})` : ''}\n`;
  }
}
