/**
 * The console's defences on localhost (docs/console.md "Security"):
 * - a launch token, exchanged once per browser for an HttpOnly SameSite=Strict session cookie;
 * - the Host header must name the console itself (a DNS-rebinding page cannot reach it);
 * - state changes are POSTs carrying the session's CSRF token, from the console's own origin;
 * - headers that keep pages out of frames, caches and other origins' reach.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { IncomingMessage } from 'node:http';

export const randomToken = (): string => randomBytes(32).toString('base64url');

export const sameSecret = (given: string | undefined, expected: string): boolean => {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
};

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

export const isLoopback = (host: string): boolean =>
  ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host) || host.startsWith('127.');

const bracket = (address: string): string => (address.includes(':') ? `[${address}]` : address);

/**
 * Host header values the console answers to: its own address and the loopback names; bound to
 * a wildcard address, also this machine's interface addresses.
 */
export const allowedHosts = (host: string, port: number): Set<string> => {
  const names = new Set([bracket(host), ...LOOPBACK_NAMES]);
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

export class Sessions {
  private readonly byId = new Map<string, Session>();
  /** Cookies are shared by every port of a host, so the name carries the port. */
  readonly cookieName: string;

  constructor(
    port: number,
    private readonly ttlMs = DEFAULT_SESSION_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.cookieName = `branch_console_${port}`;
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
   * The live session one of the request's cookies of this name names, its expiry moved on; an
   * expired one is dropped. Any of them, since a page on another port can plant a junk one.
   */
  fromRequest(request: IncomingMessage): Session | undefined {
    for (const id of cookieValues(request.headers.cookie, this.cookieName)) {
      const session = this.byId.get(id);
      if (!session) continue;
      if (session.expiresAt <= this.now()) {
        this.byId.delete(session.id);
        continue;
      }
      session.expiresAt = this.now() + this.ttlMs;
      return session;
    }
    return undefined;
  }

  cookie(session: Session): string {
    return `${this.cookieName}=${session.id}; Path=/; HttpOnly; SameSite=Strict`;
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
 * The launch token: it opens one session, once; a used or wrong token opens nothing. `renew`
 * replaces it (the terminal asks for a new link), and the old one opens nothing either.
 */
export class LaunchToken {
  private used = false;
  constructor(private current: string) {}

  get value(): string {
    return this.current;
  }

  /** True the first time the right token is given, false ever after. */
  redeem(given: string): boolean {
    if (this.used || !sameSecret(given, this.current)) return false;
    this.used = true;
    return true;
  }

  renew(token = randomToken()): string {
    this.current = token;
    this.used = false;
    return token;
  }
}

/**
 * A redirect target that stays on the console: a path of its own origin, never `//host` or
 * `/\\host` (which browsers read as another origin), and no control character or space (a
 * browser drops a tab, so `/\t/host` would become `//host`); anything else goes home.
 */
// eslint-disable-next-line no-control-regex
export const localPath = (path: string): string => (/^\/(?![/\\])[^\u0000-\u0020\u007f]*$/.test(path) ? path : '/');

/** Every value of the cookies of this name: a browser sends one per path and domain that set it. */
export const cookieValues = (header: string | undefined, name: string): string[] =>
  (header ?? '').split(';').flatMap((part) => {
    const index = part.indexOf('=');
    return index > 0 && part.slice(0, index).trim() === name ? [part.slice(index + 1).trim()] : [];
  });

/**
 * A state-changing request must come from the console's own pages: a browser sends `Origin`
 * and `Sec-Fetch-Site` on a form POST, and both must say so. (A client that sends neither,
 * such as curl, still needs the session cookie and the CSRF token.)
 */
export const isSameOrigin = (request: IncomingMessage): boolean => {
  const given = request.headers.origin;
  const site = request.headers['sec-fetch-site'];
  // Under `Referrer-Policy: no-referrer` Chromium sends `Origin: null` even for a same-origin
  // form; then Sec-Fetch-Site (which the page cannot set) must vouch for it.
  if (given === 'null') return site === 'same-origin';
  // The Host header has already been checked to be the console's own.
  if (given !== undefined && given.toLowerCase() !== `http://${request.headers.host ?? ''}`.toLowerCase()) return false;
  return site === undefined || site === 'same-origin';
};

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  // Pico's icons (checkbox ticks, select arrows) are data: SVGs in its stylesheet.
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};
