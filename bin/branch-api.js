#!/usr/bin/env node
// Entry point of the `branch-api` CLI: runs the TypeScript source through tsx (no build step).
import { register } from 'tsx/esm/api';

register();
await import('./cli.ts');
