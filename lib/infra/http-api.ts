/**
 * The HTTP API: one stage named `api` (so `{base_url}` is `<invoke URL>/api`), auto-deployed,
 * throttled, with JSON access logs; one GET route per entry of the shared route table, and the
 * `$default` route to the catch-all function so unknown paths and methods answer in the API's
 * error shape. No CORS: keys belong on servers, not in browsers.
 */
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { API_STAGE, type RouteDefinition, type RouteId } from '../../shared/api/routes';

/** The stage name is part of the contract (`{base_url}` ends in `/api`), so it is not a prop. */
export const API_STAGE_NAME = API_STAGE;

export interface StageThrottle {
  /** Steady-state requests per second, per route. */
  readonly rateLimit: number;
  /** Bucket size: requests accepted at once above the steady rate. */
  readonly burstLimit: number;
}

export interface BranchHttpApiProps {
  /** The routes to serve, usually `routes` from shared/api/routes.ts. */
  readonly routes: readonly RouteDefinition[];
  /** The function serving each route, by route id. */
  readonly functions: Readonly<Record<RouteId, lambda.IFunction>>;
  /** Serves the `$default` route: 404 for unknown paths, 405 for known paths with another method. */
  readonly fallback: lambda.IFunction;
  /** Default route throttle: API Gateway applies it to each route separately, not to the stage as a whole. */
  readonly throttle: StageThrottle;
  /**
   * How long the access log group keeps its logs.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly accessLogRetention?: logs.RetentionDays;
}

/**
 * One JSON line per request. Only request metadata: API Gateway access logs can't include
 * request headers unless asked, and the Authorization header is never asked for. No request path
 * either: `$context.path` is the raw path, so a key pasted into a URL would land here in plaintext,
 * out of reach of the functions' redaction. The route key is the matched template (`GET
 * /v1/payment-providers/{id}`, or `$default` for anything unmatched), never what the caller typed.
 */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    requestTime: '$context.requestTime',
    ip: '$context.identity.sourceIp',
    userAgent: '$context.identity.userAgent',
    method: '$context.httpMethod',
    routeKey: '$context.routeKey',
    status: '$context.status',
    protocol: '$context.protocol',
    responseLength: '$context.responseLength',
    responseLatency: '$context.responseLatency',
    integrationLatency: '$context.integrationLatency',
    integrationStatus: '$context.integrationStatus',
    integrationError: '$context.integrationErrorMessage',
    error: '$context.error.message',
  }),
);

export class BranchHttpApi extends Construct {
  readonly httpApi: apigw.HttpApi;
  readonly stage: apigw.HttpStage;
  readonly accessLogGroup: logs.LogGroup;
  /** `{base_url}`: the stage's invoke URL, ending in `/api`. */
  readonly baseUrl: string;

  constructor(scope: Construct, id: string, props: BranchHttpApiProps) {
    super(scope, id);

    this.httpApi = new apigw.HttpApi(this, 'HttpApi', {
      description: 'Branch API: read-only, bearer-key access to one branch',
      createDefaultStage: false,
      defaultIntegration: new HttpLambdaIntegration('Fallback', props.fallback),
    });

    for (const route of props.routes) {
      this.httpApi.addRoutes({
        path: route.path,
        methods: [apigw.HttpMethod[route.method]],
        integration: new HttpLambdaIntegration(route.id, props.functions[route.id]),
      });
    }

    this.accessLogGroup = new logs.LogGroup(this, 'AccessLogs', {
      retention: props.accessLogRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.stage = new apigw.HttpStage(this, 'Stage', {
      httpApi: this.httpApi,
      stageName: API_STAGE_NAME,
      autoDeploy: true,
      throttle: { rateLimit: props.throttle.rateLimit, burstLimit: props.throttle.burstLimit },
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(this.accessLogGroup),
        format: ACCESS_LOG_FORMAT,
      },
    });
    // From the API's own endpoint attribute, so no region is baked into the template.
    this.baseUrl = `${this.httpApi.apiEndpoint}/${this.stage.stageName}`;

    // Every route, $default included, is public at the gateway by design.
    Validations.of(this.httpApi).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'Authentication is the bearer API key, verified in every function by the shared Middy stack ' +
        '(format and checksum first, then one consistent GetItem, revocation and expiry on the next request), ' +
        'so that each call, failed ones included, gets the API error shape and a usage record.',
    });
  }
}
