import { buildEvent } from '../lib/local/events';
import { fallbackEntry, getRoute, matchRoute, pathWithinStage, routeKey, routes } from '../shared/api/routes';

describe('the route table', () => {
  it('holds the four GET endpoints, each requiring read', () => {
    expect(routes.map(routeKey)).toEqual([
      'GET /v1/branch',
      'GET /v1/members',
      'GET /v1/payment-providers',
      'GET /v1/payment-providers/{id}',
    ]);
    for (const route of routes) {
      expect(route.scope).toBe('read');
      expect(route.entry).toMatch(/^functions\/[a-z-]+\.ts$/);
    }
    expect(new Set(routes.map((route) => route.id)).size).toBe(4);
    expect(fallbackEntry).toBe('functions/fallback.ts');
  });

  it('finds a route by id and refuses an unknown id', () => {
    expect(getRoute('GetPaymentProvider').path).toBe('/v1/payment-providers/{id}');
    expect(() => getRoute('Nope' as never)).toThrow('Unknown route Nope');
  });
});

describe('matchRoute', () => {
  it.each([
    ['/v1/branch', 'GetBranch', {}],
    ['/v1/members', 'ListMembers', {}],
    ['/v1/payment-providers', 'ListPaymentProviders', {}],
    ['/v1/payment-providers/pp_stripe', 'GetPaymentProvider', { id: 'pp_stripe' }],
    ['/v1/payment-providers/a.b~c', 'GetPaymentProvider', { id: 'a.b~c' }],
  ])('GET %s is %s', (path, id, pathParameters) => {
    const match = matchRoute('GET', path);
    expect(match).toEqual({ kind: 'route', route: getRoute(id as never), pathParameters });
  });

  it.each([
    ['POST', '/v1/branch'],
    ['PUT', '/v1/members'],
    ['DELETE', '/v1/payment-providers/pp_stripe'],
    ['HEAD', '/v1/payment-providers'],
    ['get', '/v1/branch'],
  ])('%s %s is a known path with another method: 405, Allow GET', (method, path) => {
    expect(matchRoute(method, path)).toEqual({ kind: 'method_not_allowed', allow: 'GET' });
  });

  it.each([
    '/',
    '',
    '/v1',
    '/v2/branch',
    '/v1/branch/',
    '/v1/Branch',
    '/v1/members/mem_01',
    '/v1/payment-providers/',
    '/v1/payment-providers/a/b',
    '/api/v1/branch',
    '/v1/branchx',
    '/xv1/branch',
  ])('%j matches nothing', (path) => {
    expect(matchRoute('GET', path)).toEqual({ kind: 'not_found' });
    expect(matchRoute('POST', path)).toEqual({ kind: 'not_found' });
  });
});

describe('pathWithinStage', () => {
  it('drops the stage segment API Gateway puts in rawPath, and only that', () => {
    const within = (event: ReturnType<typeof buildEvent>) => pathWithinStage(event.rawPath, event.requestContext.stage);
    expect(within(buildEvent({ path: '/v1/members' }))).toBe('/v1/members');
    expect(within(buildEvent({ path: '/v1/members', stage: '$default' }))).toBe('/v1/members');
    expect(within(buildEvent({ path: '/v1/members', stage: 'prod' }))).toBe('/v1/members');
    expect(pathWithinStage('/apix/v1/members', 'api')).toBe('/apix/v1/members');
    expect(pathWithinStage('/api', 'api')).toBe('/api');
  });
});
