/**
 * The secret scanning report deployed (docs/decisions.md "Leaked keys"): a function of its own
 * behind the same HTTP API (`POST /security/secret-scanning`), allowed only the calls of its route
 * (keys GetItem and UpdateItem, activity PutItem); the bus grant comes from KeyEvents.emitFrom.
 */
import { Duration } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpMethod } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Construct } from 'constructs';
import { secretScanningRoute } from '../../shared/api/routes';
import { GITHUB_SECRET_SCANNING_KEYS_URL } from '../../shared/data/secret-scanning-keys';
import { TABLE_ENV } from '../../shared/data/tables';
import { ApiFunction, loggingOf, type ApiTables, type FunctionLogging } from './api-function';

/**
 * A 1 MB report's tokens cost a batch read per 100, and each live key a revocation; the handler
 * stops starting revocations in time to answer (docs/decisions.md "Leaked keys"). The one source
 * of the value is the route, which the local run's context counts down from too.
 */
export const SECRET_SCANNING_TIMEOUT = Duration.seconds(secretScanningRoute.timeoutSeconds);

export interface SecretScanningProps extends FunctionLogging {
  /**
   * Concurrent executions reserved for its function (lib/infra/concurrency.ts).
   * @default - none
   */
  readonly reservedConcurrency?: number;
  readonly tables: ApiTables;
  readonly httpApi: apigw.HttpApi;
  readonly usageRetentionDays: number;
  readonly defaultRateLimit: string;
  /**
   * The public keys document (`SECRET_SCANNING_KEYS_URL`).
   * @default GitHub's, https://api.github.com/meta/public_keys/secret_scanning
   */
  readonly keysUrl?: string;
}

export class SecretScanning extends Construct {
  readonly function: ApiFunction;

  constructor(scope: Construct, id: string, props: SecretScanningProps) {
    super(scope, id);
    this.function = new ApiFunction(this, secretScanningRoute.id, {
      entry: secretScanningRoute.entry,
      environment: { SECRET_SCANNING_KEYS_URL: props.keysUrl ?? GITHUB_SECRET_SCANNING_KEYS_URL },
      reservedConcurrency: props.reservedConcurrency,
      timeout: SECRET_SCANNING_TIMEOUT,
      ...loggingOf(props),
    }).bindTables(props.tables, props.usageRetentionDays, secretScanningRoute.access, props.defaultRateLimit);
    // The `leaked` activity entries go to the activity table at once.
    this.function.function.addEnvironment(TABLE_ENV.activity, props.tables.activity.tableName);

    props.httpApi.addRoutes({
      path: secretScanningRoute.path,
      methods: [HttpMethod[secretScanningRoute.method]],
      integration: new HttpLambdaIntegration(secretScanningRoute.id, this.function.function),
    });
  }
}
