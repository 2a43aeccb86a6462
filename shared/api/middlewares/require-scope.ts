import { insufficientScope } from '../errors';
import type { Scope } from '../../domain/schemas';
import type { ApiMiddleware, ApiRequest } from './types';

export interface RequireScopeOptions {
  scope: Scope;
}

/** 403 `insufficient_scope` unless the authenticated key holds the route's scope. */
export const requireScope = ({ scope }: RequireScopeOptions): ApiMiddleware => {
  const requireScopeBefore = ({ context }: ApiRequest): void => {
    if (!context.apiKey?.scopes.includes(scope)) throw insufficientScope(scope);
  };
  return { before: requireScopeBefore, name: 'requireScope' };
};
