/**
 * Where the local stack listens unless told otherwise (`npm start`, `branch-api serve`, `branch-api
 * console`). Outside lib/local so the OpenAPI document, which may not import the local-run folder,
 * states the same local server.
 */
import { API_STAGE } from '../shared/api/routes';

export const LOCAL_HOST = '127.0.0.1';
/** The API (env PORT). */
export const LOCAL_API_PORT = 3000;
/** The embedded DynamoDB (env DYNAMODB_PORT). */
export const LOCAL_DYNAMODB_PORT = 8000;
/** The settings console (env CONSOLE_PORT). */
export const LOCAL_CONSOLE_PORT = 3001;

/** `{base_url}` of a local stack, e.g. `http://127.0.0.1:3000/api`. */
export const localBaseUrl = (host: string = LOCAL_HOST, port: number = LOCAL_API_PORT): string =>
  `http://${host}:${port}/${API_STAGE}`;
