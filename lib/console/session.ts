/**
 * What the console keeps of its own beside Hono (docs/console.md "Security"): the one-use launch
 * token, the sessions it opens (sliding expiry, one-use form ids), the Host names it answers to,
 * and the redirect guard.
 */
import { randomBytes } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import { timingSafeEqual } from 'hono/utils/buffer';
import type { OperatorContext } from '../operator/context';

const randomToken = (): string => randomBytes(32).toString('base64url');

export const isLoopback = (host: string): boolean =>
  ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host) || host.startsWith('127.');

const bracket = (address: string): string => (address.includes(':') ? `[${address}]` : address);

/**
 * Host header values the console answers to (DNS rebinding): its own address and the loopback
 * names; bound to a wildcard address, also this machine's interface addresses.
 */
export const allowedHosts = (host: string, port: number): Set<string> => {
  const names = new Set([bracket(host), '127.0.0.1', 'localhost', '[::1]']);
  if (host === '0.0.0.0' || host === '::') {
    for (const list of Object.values(networkInterfaces())) {
      for (const entry of list ?? []) names.add(bracket(entry.address));
    }
  }
  return new Set([...names].map((name) => `${name.toLowerCase()}:${port}`));
};

export interface Session {
  id: string;
  csrf: string;
  /** One-use ids of rendered forms that show a key value: a re-sent form cannot do it twice. */
  forms: Set<string>;
  /** Epoch ms after which the session is refused; moved on by every request (sliding). */
  expiresAt: number;
}

/** Default session lifetime, sliding: 12 hours after the last request (docs/console.md "Security"). */
export const DEFAULT_SESSION_TTL_MS = 12 * 3_600_000;
/** At most this many live sessions (the oldest goes first): a bound whatever a client does. */
export const MAX_SESSIONS = 20;

/**
 * Every value of the cookies of this name: a browser sends one per path and domain that set it,
 * and hono/cookie's getCookie keeps only the first (a planted one would shadow the session).
 */
const cookieValues = (header: string | undefined, name: string): string[] =>
  (header ?? '').split(';').flatMap((part) => {
    const index = part.indexOf('=');
    return index > 0 && part.slice(0, index).trim() === name ? [part.slice(index + 1).trim()] : [];
  });

/**
 * The console's sessions and the launch token that opens them: a random token in the printed
 * link works once, for one new session; a new link (`renewToken`) makes the one before open nothing.
 */
export class Sessions {
  private readonly byId = new Map<string, Session>();
  private launched = false;
  /** Cookies are shared by every port of a host, so the name carries the port. */
  readonly cookieName: string;

  constructor(
    port: number,
    private launchToken = randomToken(),
    private readonly ttlMs = DEFAULT_SESSION_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.cookieName = `branch_console_${port}`;
  }

  get token(): string {
    return this.launchToken;
  }

  renewToken(): void {
    this.launchToken = randomToken();
    this.launched = false;
  }

  /** A new session the first time the launch token is given; nothing for a wrong or used one. */
  async launch(given: string): Promise<Session | undefined> {
    if (this.launched || !(await timingSafeEqual(given, this.launchToken))) return undefined;
    this.launched = true;
    return this.create();
  }

  get size(): number {
    return this.byId.size;
  }

  create(): Session {
    const session: Session = {
      id: randomToken(),
      csrf: randomToken(),
      forms: new Set(),
      expiresAt: this.now() + this.ttlMs,
    };
    this.byId.set(session.id, session);
    if (this.byId.size > MAX_SESSIONS) this.byId.delete(this.byId.keys().next().value!);
    return session;
  }

  /**
   * The live session one of the `Cookie` header's cookies of this name names, its expiry moved
   * on; an expired one is dropped. Any of them, since a page on another port can plant a junk one.
   */
  fromCookies(header: string | undefined): Session | undefined {
    for (const id of cookieValues(header, this.cookieName)) {
      const session = this.byId.get(id);
      if (session && session.expiresAt <= this.now()) this.byId.delete(id);
      else if (session) {
        session.expiresAt = this.now() + this.ttlMs;
        return session;
      }
    }
    return undefined;
  }

  /** A new one-use form id. Bounded, so an open tab cannot grow it forever. */
  issueForm(session: Session): string {
    const id = randomToken();
    session.forms.add(id);
    if (session.forms.size > 100) session.forms.delete(session.forms.values().next().value!);
    return id;
  }

  consumeForm(session: Session, id: string | undefined): boolean {
    return id !== undefined && session.forms.delete(id);
  }
}

/**
 * A redirect target that stays on the console: a path of its own origin, never `//host` or
 * `/\\host` (which browsers read as another origin), and no control character or space (a
 * browser drops a tab, so `/\t/host` would become `//host`); anything else goes home.
 */
// eslint-disable-next-line no-control-regex
export const localPath = (path: string): string => (/^\/(?![/\\])[^\u0000-\u0020\u007f]*$/.test(path) ? path : '/');

/** What a route reads from the request's context (set by the middleware in server.ts). */
export interface ConsoleEnv {
  /** @hono/node-server's: the Node request and response. */
  Bindings: HttpBindings;
  Variables: {
    ctx: OperatorContext;
    sessions: Sessions;
    /** Branches offered on the home page. */
    branches: readonly string[];
    session: Session;
    /** The POST body, checked for same origin and CSRF token (empty for a GET). */
    form: URLSearchParams;
  };
}

export type ConsoleContext = Context<ConsoleEnv>;
