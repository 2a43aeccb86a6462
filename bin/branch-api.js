#!/usr/bin/env node
// Entry point of the `branch-api` CLI: runs the TypeScript source through tsx (no build step).
import { register } from 'tsx/esm/api';

register();
// `serve` runs in a Node with the local stack's flags: decided before the CLI loads the rest, so
// the launcher stays small (lib/local/launch.ts).
const { relaunchIfServing } = await import('../lib/local/launch.ts');
if (!(await relaunchIfServing())) await import('./cli.ts');
