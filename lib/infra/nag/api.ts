/**
 * The HTTP API against the contract: the stage (`api`, auto-deployed), every route against
 * docs/openapi.json, each integration (Lambda proxy, payload 2.0, a timeout longer than the
 * function's) and each routed function's invoke permission (right function, right source ARN).
 */
import { readFileSync } from 'node:fs';
import { CfnApi, CfnIntegration, CfnRoute, CfnStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { CfnFunction, CfnPermission } from 'aws-cdk-lib/aws-lambda';
import { OPENAPI_FILE } from '../../project-paths';
import { API_STAGE_NAME } from '../http-api';
import { asList, idOf, read, resourceOf, resourcesOf, rule, targetOf, text, type Json } from './rule';

/** API Gateway's integration timeout when the template sets none (HTTP APIs: at most 30 s). */
const DEFAULT_INTEGRATION_TIMEOUT_MS = 30_000;

const documentedRoutes = (): Set<string> => {
  const openapi = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Json;
  return new Set(
    Object.entries<Json>(openapi.paths ?? {}).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].includes(method))
        .map((method) => `${method.toUpperCase()} ${path}`),
    ),
  );
};

/** A route with its integration and the function behind it. */
export const integrationOf = (route: CfnRoute) => {
  const target = read(route, route.target) as unknown;
  const integrationId = [target, ...asList<unknown>((target as Json | undefined)?.['Fn::Join']?.[1])]
    .map((part) => targetOf(route, part))
    .find((id) => id !== undefined);
  const integration = resourceOf(route, integrationId, CfnIntegration);
  const functionId = integration && targetOf(integration, integration.integrationUri);
  return { integration, functionId, fn: resourceOf(route, functionId, CfnFunction) };
};

const routesOf = (api: CfnApi) =>
  resourcesOf(api, CfnRoute).filter((route) => targetOf(route, route.apiId) === idOf(api));

/** Whether an execute-api source ARN pattern covers `<stage>/<method>/<path>` of the API. */
const coversRoute = (sourceArn: string, apiId: string, routeKey: string): boolean => {
  const [method = 'GET', path = '/'] = routeKey === '$default' ? ['GET', '/any'] : routeKey.split(' ');
  const probe = `${apiId}/${API_STAGE_NAME}/${method}${path}`;
  const glob = sourceArn.replace(/^arn:[^:]+:execute-api:[^:]+:[^:]+:/, '');
  return new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`).test(probe);
};

export const apiRules = [
  rule(
    CfnStage,
    'stage-name',
    `one stage, named \`${API_STAGE_NAME}\` ({base_url} ends in /${API_STAGE_NAME})`,
    (stage) =>
      stage.stageName === API_STAGE_NAME
        ? undefined
        : `stage is named ${JSON.stringify(stage.stageName)}, the contract says "${API_STAGE_NAME}"`,
  ),
  rule(CfnStage, 'stage-auto-deploy', 'the stage deploys every change (AutoDeploy)', (stage) =>
    read(stage, stage.autoDeploy) === true ? undefined : 'AutoDeploy is off: route changes would never reach the stage',
  ),
  rule(
    CfnApi,
    'routes-match-openapi',
    'every operation of docs/openapi.json has a route, every route is documented, and `$default` exists',
    (api) => {
      const documented = documentedRoutes();
      const served = new Set(routesOf(api).map((route) => route.routeKey));
      return [
        ...(resourcesOf(api, CfnStage).some((stage) => targetOf(stage, stage.apiId) === idOf(api))
          ? []
          : ['the HTTP API has no stage']),
        ...[...documented]
          .filter((key) => !served.has(key))
          .map((key) => `docs/openapi.json has ${key}, but no route serves it`),
        ...[...served]
          .filter((key) => key !== '$default' && !documented.has(key))
          .map((key) => `route ${key} is not an operation of docs/openapi.json`),
        ...(served.has('$default')
          ? []
          : [
              'no $default route: unknown paths and methods would get API Gateway\u2019s own answer, not the API\u2019s error shape',
            ]),
      ];
    },
  ),
  rule(
    CfnRoute,
    'route-integration',
    'each route reaches a function of the stack through a Lambda proxy integration, payload format 2.0, with a timeout longer than the function\u2019s',
    (route) => {
      const { integration, fn } = integrationOf(route);
      const key = route.routeKey;
      if (!integration) return `route ${key} has no integration of the stack`;
      if (!fn) return `route ${key} reaches no function of the stack`;
      const integrationMs = read(integration, integration.timeoutInMillis) ?? DEFAULT_INTEGRATION_TIMEOUT_MS;
      const functionMs = (read(fn, fn.timeout) ?? 3) * 1000;
      return [
        ...(integration.integrationType === 'AWS_PROXY'
          ? []
          : [`route ${key}: integration type ${integration.integrationType}, expected AWS_PROXY`]),
        ...(String(integration.payloadFormatVersion) === '2.0'
          ? []
          : [
              `route ${key}: payload format ${integration.payloadFormatVersion ?? '1.0 (the default)'}, the handlers read 2.0 events`,
            ]),
        ...(integrationMs > functionMs
          ? []
          : [
              `route ${key}: the integration times out after ${integrationMs} ms, before its function's ${functionMs} ms`,
            ]),
      ];
    },
  ),
  rule(
    CfnRoute,
    'invoke-permission',
    'each routed function lets API Gateway invoke it, from this API and this route only',
    (route) => {
      const { functionId } = integrationOf(route);
      if (!functionId) return undefined;
      const apiId = targetOf(route, route.apiId) ?? '';
      const allowed = resourcesOf(route, CfnPermission).some(
        (permission) =>
          targetOf(permission, permission.functionName) === functionId &&
          permission.principal === 'apigateway.amazonaws.com' &&
          permission.action === 'lambda:InvokeFunction' &&
          coversRoute(text(read(permission, permission.sourceArn)) ?? '', apiId, route.routeKey),
      );
      return allowed
        ? undefined
        : `no permission lets API Gateway invoke ${functionId} for ${route.routeKey} from API ${apiId}`;
    },
  ),
];
