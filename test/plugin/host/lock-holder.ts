/**
 * Test helper process: takes the host lock named argv[2], prints "held", then holds it until
 * killed or, when argv[3] is given, releases it after that many ms and prints "released".
 */
import { acquireHostLock } from '../../../ipam-plugin/host/lock.ts';

const lock = await acquireHostLock(process.argv[2], 10_000);
process.stdout.write('held\n');
const holdMs = process.argv[3];
if (holdMs === undefined) setInterval(() => undefined, 60_000);
else {
  setTimeout(() => {
    void lock.release().then(() => process.stdout.write('released\n'));
  }, Number(holdMs));
}
