/**
 * The HTTP API as deployed against the contract: the stage (`api`, auto-deployed), every route
 * against docs/openapi.json, each integration (Lambda proxy, payload 2.0, a timeout longer than
 * the function's) and each function's invoke permission (right function, right source ARN).
 */
import { API_STAGE_NAME } from '../../infra/http-api';
import type { Json } from '../assembly';
import { defect, resourcesOf, targetOf, type CheckContext, type TemplateCheck } from './table';

/** API Gateway's integration timeout when the template sets none (HTTP APIs: at most 30 s). */
const DEFAULT_INTEGRATION_TIMEOUT_MS = 30_000;

const routeKeysOfOpenApi = (openapi: Json): Set<string> =>
  new Set(
    Object.entries<Json>(openapi.paths ?? {}).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].includes(method))
        .map((method) => `${method.toUpperCase()} ${path}`),
    ),
  );

/** Every route of the template with its integration and the function behind it. */
const routesWithIntegrations = ({ assembly, resolver }: CheckContext) =>
  resourcesOf(assembly, 'AWS::ApiGatewayV2::Route').map(([id, route]) => {
    // `integrations/<id>`, the integration's Ref resolving to its logical id.
    const integrationId = /^integrations\/(.+)$/.exec(resolver.resolve(route.Target) ?? '')?.[1];
    const integration = integrationId ? assembly.resources[integrationId] : undefined;
    const functionId = targetOf(integration?.Properties?.IntegrationUri);
    return { id, routeKey: String(route.RouteKey ?? ''), integrationId, integration, functionId };
  });

const stageName: TemplateCheck = {
  name: 'stage-name',
  description: `one stage, named \`${API_STAGE_NAME}\` ({base_url} ends in /${API_STAGE_NAME})`,
  run: ({ assembly }) => {
    const stages = resourcesOf(assembly, 'AWS::ApiGatewayV2::Stage');
    if (stages.length === 0) return [defect(assembly.stack, 'the HTTP API has no stage')];
    return stages
      .filter(([, stage]) => stage.StageName !== API_STAGE_NAME)
      .map(([id, stage]) =>
        defect(id, `stage is named ${JSON.stringify(stage.StageName)}, the contract says "${API_STAGE_NAME}"`),
      );
  },
};

const stageAutoDeploy: TemplateCheck = {
  name: 'stage-auto-deploy',
  description: 'the stage deploys every change (AutoDeploy)',
  run: ({ assembly }) =>
    resourcesOf(assembly, 'AWS::ApiGatewayV2::Stage')
      .filter(([, stage]) => stage.AutoDeploy !== true)
      .map(([id]) => defect(id, 'AutoDeploy is off: route changes would never reach the stage')),
};

const routesMatchContract: TemplateCheck = {
  name: 'routes-match-openapi',
  description: 'every operation of docs/openapi.json has a route, every route is documented, and `$default` exists',
  run: (context) => {
    const documented = routeKeysOfOpenApi(context.openapi);
    const routes = routesWithIntegrations(context);
    const served = new Set(routes.map((route) => route.routeKey));
    const stack = context.assembly.stack;
    return [
      ...[...documented]
        .filter((key) => !served.has(key))
        .map((key) => defect(stack, `docs/openapi.json has ${key}, but no route serves it`)),
      ...routes
        .filter((route) => route.routeKey !== '$default' && !documented.has(route.routeKey))
        .map((route) => defect(route.id, `route ${route.routeKey} is not an operation of docs/openapi.json`)),
      ...(served.has('$default')
        ? []
        : [
            defect(
              stack,
              'no $default route: unknown paths and methods would get API Gateway\u2019s own answer, not the API\u2019s error shape',
            ),
          ]),
    ];
  },
};

const routeIntegration: TemplateCheck = {
  name: 'route-integration',
  description:
    'each route reaches a function of the stack through a Lambda proxy integration, payload format 2.0, with a timeout longer than the function\u2019s',
  run: (context) =>
    routesWithIntegrations(context).flatMap(({ id, routeKey, integrationId, integration, functionId }) => {
      if (!integration) return [defect(id, `route ${routeKey} has no integration of the stack`)];
      const props = (integration.Properties ?? {}) as Json;
      const fn = functionId ? context.assembly.resources[functionId] : undefined;
      if (!fn || fn.Type !== 'AWS::Lambda::Function')
        return [defect(integrationId!, `route ${routeKey} reaches no function of the stack`)];
      const found = [];
      if (props.IntegrationType !== 'AWS_PROXY')
        found.push(
          defect(integrationId!, `route ${routeKey}: integration type ${props.IntegrationType}, expected AWS_PROXY`),
        );
      if (String(props.PayloadFormatVersion) !== '2.0') {
        found.push(
          defect(
            integrationId!,
            `route ${routeKey}: payload format ${props.PayloadFormatVersion ?? '1.0 (the default)'}, the handlers read 2.0 events`,
          ),
        );
      }
      const integrationMs = Number(props.TimeoutInMillis ?? DEFAULT_INTEGRATION_TIMEOUT_MS);
      const functionMs = Number(fn.Properties?.Timeout ?? 3) * 1000;
      if (!(integrationMs > functionMs)) {
        found.push(
          defect(
            integrationId!,
            `route ${routeKey}: the integration times out after ${integrationMs} ms, before its function's ${functionMs} ms`,
          ),
        );
      }
      return found;
    }),
};

/** Whether an execute-api source ARN pattern covers `<stage>/<method>/<path>` of the API. */
const coversRoute = (sourceArn: string, apiId: string, routeKey: string): boolean => {
  const [method = 'GET', path = '/'] = routeKey === '$default' ? ['GET', '/any'] : routeKey.split(' ');
  const probe = `arn:aws:execute-api:region:account:${apiId}/${API_STAGE_NAME}/${method}${path}`;
  const glob = sourceArn.replace(/^arn:[^:]+:execute-api:[^:]+:[^:]+:/, 'arn:aws:execute-api:region:account:');
  return new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`).test(probe);
};

const invokePermission: TemplateCheck = {
  name: 'invoke-permission',
  description: 'each routed function lets API Gateway invoke it, from this API and this route only',
  run: (context) => {
    const permissions = resourcesOf(context.assembly, 'AWS::Lambda::Permission').map(([id, p]) => ({
      id,
      functionId: targetOf(p.FunctionName),
      principal: p.Principal,
      action: p.Action,
      sourceArn: context.resolver.resolve(p.SourceArn) ?? '',
    }));
    return routesWithIntegrations(context).flatMap(({ id, routeKey, functionId, integration }) => {
      if (!functionId) return [];
      const apiId = targetOf(integration?.Properties?.ApiId) ?? '';
      const ok = permissions.some(
        (p) =>
          p.functionId === functionId &&
          p.principal === 'apigateway.amazonaws.com' &&
          p.action === 'lambda:InvokeFunction' &&
          coversRoute(p.sourceArn, apiId, routeKey),
      );
      return ok
        ? []
        : [defect(id, `no permission lets API Gateway invoke ${functionId} for ${routeKey} from API ${apiId}`)];
    });
  },
};

export const apiChecks: readonly TemplateCheck[] = [
  stageName,
  stageAutoDeploy,
  routesMatchContract,
  routeIntegration,
  invokePermission,
];
