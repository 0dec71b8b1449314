import js from '@eslint/js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import tseslint from 'typescript-eslint';

const read = (file) => JSON.parse(readFileSync(join(import.meta.dirname, file), 'utf8'));
const { peerDependenciesMeta = {} } = read('package.json');
/** The framework-free rule's manifest, which the import test and the package check read too. */
const boundaries = read('scripts/boundaries.json');

const isOpenTelemetry = (name) => name.startsWith(boundaries.openTelemetry);

/** The optional peers, as package.json lists them (OpenTelemetry has a rule of its own, below). */
const peers = Object.entries(peerDependenciesMeta)
  .filter(([name, meta]) => meta.optional && !isOpenTelemetry(name))
  .map(([name]) => name);

/** What the core may not import, each peer with its subpaths, and the servers of the manifest. */
const frameworks = [...peers.flatMap((name) => [name, `${name}/*`]), ...boundaries.servers];

/** The patterns refused in a file: every framework but the peers the manifest lets it import. */
function frameworkFree(allowed = [], message = 'The core is framework-free.') {
  return frameworks
    .filter((group) => !allowed.some((peer) => group === peer || group === `${peer}/*`))
    .map((group) => ({ group: [group], message }));
}

const openTelemetryFree = [
  {
    group: [`${boundaries.openTelemetry}*`],
    message: 'Only src/otel imports OpenTelemetry: the core holds the Telemetry interface alone.',
  },
];

/** A manifest path as an eslint glob: a folder (ending in `/`) stands for every file in it. */
const glob = (path) => (path.endsWith('/') ? `${path}**/*.ts` : path);

/** The peer entries of src/ (adapters are held to the rule by the import test alone). */
const srcPeerEntries = boundaries.peerEntries.filter(({ path }) => path.startsWith('src/'));
const otelHome = srcPeerEntries.find(({ loads = [] }) => loads.some(isOpenTelemetry));

export default tseslint.config(
  {
    ignores: [
      'dist',
      'coverage',
      'node_modules',
      'reports',
      'docs-api',
      '.docs-run',
      '.stryker-tmp',
      'src/platform/events/data-validators.generated.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    files: ['examples/**/*.js', 'scripts/**/*.mjs', 'test/**/*.mjs', 'bench/**/*.mjs'],
    languageOptions: {
      globals: {
        console: 'readonly',
        process: 'readonly',
        URL: 'readonly',
        Request: 'readonly',
        Response: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        TextDecoder: 'readonly',
        crypto: 'readonly',
        ReadableStream: 'readonly',
        TextEncoder: 'readonly',
        fetch: 'readonly',
      },
    },
  },
  {
    // The inspector's page script runs in the browser, as a plain script. Its names are checked
    // by tsc against the DOM's types (tsconfig.inspector.json), so no list of globals here.
    files: ['src/cli/inspector/assets/**/*.js'],
    languageOptions: { sourceType: 'script' },
    rules: { 'no-undef': 'off' },
  },
  {
    // The core stays framework-free (scripts/boundaries.json): the unrestricted files and the peer
    // entries aside, no file of src/ imports a framework, a server or a client, not even its
    // types. Only src/otel may import OpenTelemetry (docs/telemetry.md).
    files: ['src/**/*.ts'],
    ignores: [...boundaries.unrestricted, ...srcPeerEntries].map(({ path }) => glob(path)),
    rules: {
      'no-restricted-imports': ['error', { patterns: [...frameworkFree(), ...openTelemetryFree] }],
    },
  },
  {
    files: [...boundaries.unrestricted.map(({ path }) => glob(path)), 'src/adapters/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: openTelemetryFree }] },
  },
  // Each peer entry: the peers it is built on (or the types it takes), and no other framework.
  ...srcPeerEntries.map(({ path, subpath, loads = [], typesOf = [] }) => ({
    files: [glob(path)],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...frameworkFree([...loads, ...typesOf], `schoolhooks/${subpath} is framework-free.`),
            ...(path === otelHome.path ? [] : openTelemetryFree),
          ],
        },
      ],
    },
  })),
);
