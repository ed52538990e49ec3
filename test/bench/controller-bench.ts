/**
 * Controller benchmark (a script, not a test; issue 10): 3,000 leaked allocations over 250 nodes
 * reclaimed on a real kube-apiserver, Calico's GC scenario (calico PR #8136: ~50 min for 3k pods
 * on 250 nodes, grace period included). The scenarios: ./controller-bench-lib.ts.
 *
 * Usage: node_modules/.bin/node test/bench/controller-bench.ts [--only-b] [--nodes 250] [--per-node 12]
 */
import { parseArgs } from 'node:util';
import { scenario } from './controller-bench-lib.ts';

const { values } = parseArgs({
  options: {
    'only-b': { type: 'boolean', default: false },
    nodes: { type: 'string', default: '250' },
    'per-node': { type: 'string', default: '12' },
  },
});
const size = { nodes: Number(values.nodes), perNode: Number(values['per-node']) };
const leaks = (size.nodes * size.perNode).toLocaleString('en-US');
if (!values['only-b'])
  console.log(
    JSON.stringify(await scenario(`A: ${leaks} pods gone, ${size.nodes} nodes alive`, false, size)),
  );
console.log(
  JSON.stringify(await scenario(`B: ${leaks} pods and their ${size.nodes} nodes gone`, true, size)),
);
