/**
 * The console's route table, as Middy's http-router holds routes: method, path pattern and one
 * small handler each. The server matches a request against it after the checks every request
 * gets (Host, session; for a POST, same origin and CSRF token).
 */
import type { ServerResponse } from 'node:http';
import type { OperatorContext } from '../operator/context';
import type { Params, Reply } from './http';
import type { Session, Sessions } from './security';

export interface RouteRequest {
  ctx: OperatorContext;
  session: Session;
  sessions: Sessions;
  /** Path parameters, each checked (length, no control characters). */
  params: Params;
  query: URLSearchParams;
  /** The POST body (empty for a GET). */
  form: URLSearchParams;
  /** For a route that streams (the CSV export): it writes here and returns undefined. */
  response: ServerResponse;
  /** Branches offered on the home page. */
  branches: readonly string[];
}

export interface ConsoleRoute {
  method: 'GET' | 'POST';
  /** `/branches/:branch/keys`: `:name` segments are parameters. */
  path: string;
  handle(request: RouteRequest): Promise<Reply | undefined>;
}

export const page = (body: string, status = 200): Reply => ({ status, body });
export const redirect = (location: string): Reply => ({ status: 303, body: '', headers: { Location: location } });
