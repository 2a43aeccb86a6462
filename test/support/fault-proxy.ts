/**
 * A small in-process HTTP proxy in front of the embedded DynamoDB that injects faults per
 * DynamoDB operation (the `X-Amz-Target` header), so tests see what the real SDK does when
 * DynamoDB throttles, fails, stalls, drops the connection or goes away and comes back.
 *
 *   const proxy = await startFaultProxy(process.env.DYNAMODB_ENDPOINT!);
 *   proxy.inject('PutItem', { kind: 'error' }, 1);   // the first PutItem answers a 500
 *   proxy.inject('*', { kind: 'throttle' });         // every call is throttled from now on
 *   proxy.inject('UpdateItem', { kind: 'throttle' }, Infinity, 9); // 9 pass, then a full partition
 *   await proxy.stop(); ... await proxy.start();     // the database goes away and comes back
 *
 * Anything without a matching rule is forwarded unchanged. Nothing is stubbed in the client:
 * the SDK under test speaks real HTTP to the proxy.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { forwardRequest, readBody } from '../../lib/local/forward';

export type Fault =
  /** HTTP 400 ProvisionedThroughputExceededException, as DynamoDB throttles. */
  | { kind: 'throttle' }
  /** HTTP 500 InternalServerError. */
  | { kind: 'error' }
  /** HTTP 400 ValidationException: DynamoDB refuses what it was sent. */
  | { kind: 'invalid' }
  /** Never answers: the request hangs until the client gives up (or the proxy stops). */
  | { kind: 'stall' }
  /** Drops the connection without an answer (ECONNRESET on the client). */
  | { kind: 'reset' }
  /** Answers normally, after `ms` milliseconds. */
  | { kind: 'delay'; ms: number };

/** A DynamoDB operation name (`GetItem`, `Query`, `PutItem`, ...) or `*` for any. */
export type Operation = string;

export interface SeenRequest {
  operation: string;
  /** The fault applied, or `forwarded`. */
  outcome: Fault['kind'] | 'forwarded';
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: the value for DYNAMODB_ENDPOINT. Stays the same across stop/start. */
  readonly endpoint: string;
  readonly port: number;
  /**
   * Applies `fault` to the next `times` calls of `operation` (default: every call until cleared),
   * after letting the first `after` of them through (default 0): a partition's capacity.
   */
  inject(operation: Operation, fault: Fault, times?: number, after?: number): void;
  /** Removes every rule: all calls are forwarded again. */
  clear(): void;
  /** Every request the proxy received, in order. */
  readonly requests: readonly SeenRequest[];
  /** Operations of the requests received, e.g. `['GetItem', 'Query', 'PutItem']`. */
  operations(): string[];
  /** Forgets the requests seen so far. */
  resetLog(): void;
  /** Resolves once `predicate(requests)` holds, checked now and on every request the proxy receives. */
  until(predicate: (requests: readonly SeenRequest[]) => boolean): Promise<void>;
  /** The database goes away: open connections are dropped, new ones refused. */
  stop(): Promise<void>;
  /** The database comes back on the same port. */
  start(): Promise<void>;
  /** Stops for good. */
  close(): Promise<void>;
}

interface Rule {
  operation: Operation;
  fault: Fault;
  remaining: number;
  /** Matching calls still forwarded before the fault starts. */
  passing: number;
}

const JSON_CONTENT_TYPE = 'application/x-amz-json-1.0';
const ERROR_BODIES = {
  throttle: {
    status: 400,
    type: 'ProvisionedThroughputExceededException',
    message: 'The level of configured provisioned throughput for the table was exceeded (injected by fault proxy)',
  },
  error: { status: 500, type: 'InternalServerError', message: 'Internal server error (injected by fault proxy)' },
  invalid: {
    status: 400,
    type: 'ValidationException',
    message: 'One or more parameter values were invalid (injected by fault proxy)',
  },
} as const;

const operationOf = (req: IncomingMessage): string => {
  const target = req.headers['x-amz-target'];
  const value = Array.isArray(target) ? target[0] : target;
  return value?.split('.').pop() ?? 'unknown';
};

export const startFaultProxy = async (target: string): Promise<FaultProxy> => {
  const upstream = new URL(target);
  let rules: Rule[] = [];
  const seen: SeenRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let waiters: { predicate: (requests: readonly SeenRequest[]) => boolean; resolve: () => void }[] = [];
  const notify = () => {
    waiters = waiters.filter((waiter) => (waiter.predicate(seen) ? (waiter.resolve(), false) : true));
  };

  const takeFault = (operation: string): Fault | undefined => {
    const rule = rules.find((r) => r.remaining > 0 && (r.operation === '*' || r.operation === operation));
    if (!rule) return undefined;
    if (rule.passing > 0) {
      rule.passing -= 1;
      return undefined;
    }
    rule.remaining -= 1;
    return rule.fault;
  };

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer): void =>
    forwardRequest(upstream, req, res, body);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    const operation = operationOf(req);
    const fault = takeFault(operation);
    seen.push({ operation, outcome: fault?.kind ?? 'forwarded' });
    notify();
    switch (fault?.kind) {
      case undefined:
        return forward(req, res, body);
      case 'throttle':
      case 'error':
      case 'invalid': {
        const { status, type, message } = ERROR_BODIES[fault.kind];
        res.writeHead(status, { 'Content-Type': JSON_CONTENT_TYPE, 'x-amzn-RequestId': `fault-${seen.length}` });
        res.end(JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message }));
        return;
      }
      case 'stall':
        // Left unanswered; stop() or the client's own timeout ends it.
        return;
      case 'reset':
        req.socket.destroy();
        return;
      case 'delay': {
        const timer = setTimeout(() => {
          timers.delete(timer);
          forward(req, res, body);
        }, fault.ms);
        timers.add(timer);
        return;
      }
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  const listen = async (port: number): Promise<number> => {
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    return (server.address() as AddressInfo).port;
  };

  const stop = async (): Promise<void> => {
    if (!server.listening) return;
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  const port = await listen(0);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    inject: (operation, fault, times = Number.POSITIVE_INFINITY, after = 0) => {
      rules.push({ operation, fault, remaining: times, passing: after });
    },
    clear: () => {
      rules = [];
    },
    get requests() {
      return [...seen];
    },
    operations: () => seen.map((request) => request.operation),
    resetLog: () => void seen.splice(0),
    until: (predicate) =>
      new Promise<void>((resolve) => {
        waiters.push({ predicate, resolve });
        notify();
      }),
    stop,
    start: async () => {
      if (!server.listening) await listen(port);
    },
    close: stop,
  };
};
