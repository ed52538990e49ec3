// ESLint flat config: typescript-eslint's recommended type-checked rules over the whole tree,
// plus rules of our own: blockipam/core-entries (core is imported through its package "exports"
// only), blockipam/part-boundaries (no part imports another's internals, nor cmd/),
// blockipam/core-rooms (core's rooms import only the rooms below them) and blockipam/docs-lint.
import { spawnSync } from 'node:child_process';
import js from '@eslint/js';
import { dirname, relative, resolve, sep } from 'node:path';
import tseslint from 'typescript-eslint';

/**
 * scripts/docs-lint.ts as a lint rule, so `eslint .` (the integration check everyone runs) fails on
 * a broken or outside citation too. It runs once per eslint run, on the script's own file, with the
 * project's Node 24 (eslint itself may run on an older Node that cannot load TypeScript).
 */
const docsLint = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    return {
      Program(node) {
        const run = spawnSync('node_modules/.bin/node', ['scripts/docs-lint.ts'], {
          cwd: import.meta.dirname,
          encoding: 'utf8',
        });
        if (run.status === 0) return;
        const lines = (run.stderr || run.error?.message || 'docs-lint did not run').trim().split('\n');
        for (const line of lines.filter((l, i) => i === 0 || !l.startsWith('docs-lint:')))
          context.report({ node, message: `docs-lint: ${line}` });
      },
    };
  },
};

const root = import.meta.dirname;
const coreDir = resolve(root, 'core') + sep;
const coreTestsDir = resolve(root, 'test', 'core') + sep;
/** package.json "exports": the only way into core from outside it. */
const entries = new Map([
  ['core/index.ts', 'blockipam/core'],
  ['core/kube/index.ts', 'blockipam/core/kube'],
  ['core/kube/kubeconfig.ts', 'blockipam/core/kubeconfig'],
  ['core/node-ipam/index.ts', 'blockipam/core/node-ipam'],
  ['core/cni/index.ts', 'blockipam/core/cni'],
  ['core/cni/errors.ts', 'blockipam/core/cni/errors'],
  ['core/cni/forward.ts', 'blockipam/core/cni/forward'],
  ['core/cni/commands/version.ts', 'blockipam/core/cni/version'],
  ['core/cni/netconf-schema.ts', 'blockipam/core/cni/netconf-schema'],
  ['core/version.ts', 'blockipam/core/version'],
]);

/**
 * A relative import that lands in core/ from a file outside core/ is an error: use the entry
 * (`blockipam/core`, `blockipam/core/kube`, `blockipam/core/kubeconfig`, `blockipam/core/node-ipam`…). One exception: core's
 * own unit tests (test/core/) may import a core file that is not an entry, to test an internal
 * (claimBlock, contextOf, …); what an entry exports they import through the entry too.
 */
const coreEntries = {
  meta: {
    type: 'problem',
    messages: {
      deep: "import core through its exports map ('blockipam/core', 'blockipam/core/kube', 'blockipam/core/kubeconfig', 'blockipam/core/node-ipam', 'blockipam/core/cni'…), not '{{source}}'",
      entry: "import '{{source}}' as '{{entry}}'",
    },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    if (file.startsWith(coreDir)) return {};
    const check = (node) => {
      if (node?.type !== 'Literal' || typeof node.value !== 'string' || !node.value.startsWith('.')) return;
      const target = resolve(dirname(file), node.value);
      if (!target.startsWith(coreDir)) return;
      const entry = entries.get(relative(root, target).split(sep).join('/'));
      if (entry !== undefined)
        context.report({ node, messageId: 'entry', data: { source: node.value, entry } });
      else if (!file.startsWith(coreTestsDir))
        context.report({ node, messageId: 'deep', data: { source: node.value } });
    };
    return {
      ImportDeclaration: (n) => check(n.source),
      ExportNamedDeclaration: (n) => check(n.source),
      ExportAllDeclaration: (n) => check(n.source),
      ImportExpression: (n) => check(n.source),
    };
  },
};

/** The parts (README "Folders show the architecture"); core is shared by all of them. */
const parts = ['core', 'ipam-plugin', 'block-controller', 'cli'];
const partOf = (path) => parts.find((p) => path.startsWith(resolve(root, p) + sep));
const cmdDir = resolve(root, 'cmd') + sep;
const packageJson = resolve(root, 'package.json');

/**
 * No part imports another part's internals: a relative import from a file of core/,
 * ipam-plugin/, block-controller/ or cli/ that lands in another of them is an error (what two
 * parts both decide is one pure function in core). No part imports cmd/ (the multi-call wiring
 * imports the parts, never the reverse), and core imports nothing outside core/ but
 * package.json. cmd/, scripts/ and test/ may import any part.
 */
const partBoundaries = {
  meta: {
    type: 'problem',
    messages: {
      cross: "{{from}}/ must not import {{to}}/'s internals ('{{source}}'): move the shared rule into core",
      cmd: "{{from}}/ must not import cmd/ ('{{source}}'): cmd/ wires the parts, they never import it",
      outside: "core/ must not import outside core/ ('{{source}}')",
    },
    schema: [],
  },
  create(context) {
    const from = partOf(context.filename);
    if (from === undefined) return {};
    const check = (node) => {
      if (node?.type !== 'Literal' || typeof node.value !== 'string' || !node.value.startsWith('.')) return;
      const target = resolve(dirname(context.filename), node.value);
      const data = { from, source: node.value };
      if (target.startsWith(cmdDir)) return context.report({ node, messageId: 'cmd', data });
      const to = partOf(target);
      if (from === 'core' && to === undefined && target !== packageJson)
        return context.report({ node, messageId: 'outside', data });
      if (to === undefined || to === from || to === 'core') return;
      context.report({ node, messageId: 'cross', data: { ...data, to } });
    };
    return {
      ImportDeclaration: (n) => check(n.source),
      ExportNamedDeclaration: (n) => check(n.source),
      ExportAllDeclaration: (n) => check(n.source),
      ImportExpression: (n) => check(n.source),
    };
  },
};

/**
 * Core's rooms (docs/design-core.md, the layout at its top) and the rooms each may import: address and errors
 * at the ground, block over address, the datastores (datastore/, kube/) over errors, the
 * allocator over those, routes, node-ipam and adopt over it, cni on top. The files at core/'s top (resources,
 * selector, config, time, …, the barrel) are open to every room.
 */
const coreRooms = {
  address: [],
  errors: [],
  block: ['address'],
  datastore: ['errors', 'kube'],
  kube: ['errors', 'datastore'],
  allocator: ['address', 'block', 'datastore', 'errors'],
  routes: ['address', 'allocator', 'block'],
  'node-ipam': ['address', 'allocator', 'block', 'datastore', 'errors'],
  cni: ['address', 'adopt', 'allocator', 'block', 'datastore', 'errors', 'node-ipam'],
  adopt: ['address', 'allocator', 'block', 'datastore'],
};
const roomOf = (path) => {
  if (!path.startsWith(coreDir)) return undefined;
  const [first, ...rest] = relative(coreDir, path).split(sep);
  return rest.length === 0 ? undefined : first;
};

/** A relative import from one of core's rooms into a room not listed as below it is an error. */
const coreRoomsRule = {
  meta: {
    type: 'problem',
    messages: {
      up: "core/{{from}}/ must not import core/{{to}}/ ('{{source}}'): core/{{from}}/ may import {{allowed}}",
    },
    schema: [],
  },
  create(context) {
    const from = roomOf(context.filename);
    if (from === undefined) return {};
    const allowed = coreRooms[from] ?? [];
    const check = (node) => {
      if (node?.type !== 'Literal' || typeof node.value !== 'string' || !node.value.startsWith('.')) return;
      const to = roomOf(resolve(dirname(context.filename), node.value));
      if (to === undefined || to === from || allowed.includes(to)) return;
      const list = allowed.length === 0 ? "only core's top-level files" : allowed.join(', ');
      context.report({ node, messageId: 'up', data: { from, to, source: node.value, allowed: list } });
    };
    return {
      ImportDeclaration: (n) => check(n.source),
      ExportNamedDeclaration: (n) => check(n.source),
      ExportAllDeclaration: (n) => check(n.source),
      ImportExpression: (n) => check(n.source),
    };
  },
};

/** The project's own rules (exported for test/scripts/eslint-rules.test.ts). */
export const blockipam = {
  rules: {
    'core-entries': coreEntries,
    'core-rooms': coreRoomsRule,
    'docs-lint': docsLint,
    'part-boundaries': partBoundaries,
  },
};

export default tseslint.config(
  { ignores: ['dist/', 'build/', 'node_modules/', '**/*.generated.js', '**/*.generated.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { blockipam },
    rules: {
      'blockipam/core-entries': 'error',
      'blockipam/part-boundaries': 'error',
      'blockipam/core-rooms': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // node:test's describe/test return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
    },
  },
  {
    files: ['scripts/docs-lint.ts'],
    rules: { 'blockipam/docs-lint': 'error' },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
