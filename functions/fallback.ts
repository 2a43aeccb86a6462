import { createFallbackHandler } from '../shared/fallback';

export const handler = createFallbackHandler();
