/**
 * Layer rules for the runtime code (README "Layout"): shared/domain ← shared/data ← shared/config
 * ← shared/api ← shared/lambda ← functions/ (shared/config: the environment readers the operator
 * tooling shares). A layer imports only the layers below it; the runtime imports
 * nothing from lib/, bin/, scripts/ or bench/, and scripts/ and bench/ nothing from test/; no
 * cycle anywhere, type-only imports included.
 * `npm run lint` runs it, so CI fails on a violation.
 * @type {import('dependency-cruiser').IConfiguration}
 */
const layer = (name, mayNotImport) => ({
  name: `layer-${name}`,
  comment: `shared/${name} may import only the layers below it (README "Layout").`,
  severity: 'error',
  from: { path: `^shared/${name}/` },
  to: { path: mayNotImport },
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycle, type-only imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    layer('domain', '^(shared/(data|config|api|lambda)|functions)/'),
    layer('data', '^(shared/(config|api|lambda)|functions)/'),
    layer('config', '^(shared/(api|lambda)|functions)/'),
    layer('api', '^(shared/lambda|functions)/'),
    layer('lambda', '^functions/'),
    {
      name: 'domain-has-no-io',
      comment: 'shared/domain holds rules and shapes only: no database, network or file access, no Lambda tooling.',
      severity: 'error',
      from: { path: '^shared/domain/' },
      to: {
        path: '(^|/)node_modules/(@aws-sdk|@aws-lambda-powertools|@middy|@smithy)/|^(fs|http|https|child_process)$',
        dependencyTypes: ['npm', 'npm-dev', 'core'],
      },
    },
    {
      name: 'runtime-stays-out-of-tooling',
      comment:
        'functions/ and shared/ are bundled into Lambda: they import nothing from lib/, bin/, scripts/ or bench/.',
      severity: 'error',
      from: { path: '^(functions|shared)/' },
      to: { path: '^(lib|bin|scripts|bench|test)/' },
    },
    {
      name: 'tooling-stays-out-of-tests',
      comment:
        'scripts/ and bench/ (npm run load, npm run bench) import nothing from test/: what they share with the tests lives in bench/.',
      severity: 'error',
      from: { path: '^(scripts|bench)/' },
      to: { path: '^test/' },
    },
    {
      name: 'functions-are-leaves',
      comment:
        "Nothing but tests, benchmarks and the local stack's one loader imports an endpoint file: each is an entry point of its own bundle.",
      severity: 'error',
      from: { pathNot: '^((test|bench)/|lib/local/functions\\.ts$)' },
      to: { path: '^functions/' },
    },
    {
      name: 'stack-not-on-verifier',
      comment: 'The stack (lib/infra) is judged by the verifier (lib/verify), never built from it.',
      severity: 'error',
      from: { path: '^lib/infra/' },
      to: { path: '^lib/verify/' },
    },
    {
      name: 'deployed-operations-not-under-local',
      comment:
        'What operates a deployed stack (operator library, console, infra, verifier) never imports the local-run folder.',
      severity: 'error',
      from: { path: '^lib/(operator|console|infra|openapi)/' },
      to: { path: '^lib/local/' },
    },
  ],
  options: {
    // Seeded violations for test/layers.test.ts; that test cruises them on their own.
    exclude: { path: '^test/fixtures/' },
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
