/**
 * The log format of every function: Powertools' standard structure (the same keys, in the same
 * order, as its default formatter), plus the API request's own fields, `request_id` and `route`,
 * on every line that request logs.
 *
 * The request's fields are added here, when a line is written, instead of with `appendKeys` at
 * the start of every request: that call (a reserved-key filter, a deep merge, two environment
 * reads for the invocation store) cost about 5 µs of each request's own overhead, paired, and
 * most requests log nothing (docs/performance.md "Where the µs go").
 *
 * The standard keys are written out here because Powertools does not export its default formatter
 * (PowertoolsLogFormatter; the package exports only the abstract LogFormatter); test/log-context.test.ts
 * holds this one to that one's output, key for key.
 */
import { LogFormatter, LogItem } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import type { RequestLogFields } from '../api/middlewares';
import { invocationStore } from './invocation-scope';

/** The invocation store's key of the request's fields, where invocations keep their values apart. */
const REQUEST_KEY = 'branch-api.logger.request';

interface Request {
  awsRequestId: string;
  fields: LogAttributes;
}

export class RequestLogFormatter extends LogFormatter implements RequestLogFields {
  /**
   * The request being handled, where the environment serves one invocation at a time (standard
   * Lambda). Where it serves several at once (Managed Instances, the local gateway) each keeps its
   * own in the invocation store, as Powertools keeps the Lambda context (shared/lambda/invocation-scope.ts).
   */
  #request: Request | undefined;

  /** The request being handled: its fields go on the lines logged with its Lambda context. */
  setRequest(awsRequestId: string, fields: { request_id: string; route: string }): void {
    const request = { awsRequestId, fields };
    const store = invocationStore();
    if (store === undefined) this.#request = request;
    else store.set(REQUEST_KEY, request);
  }

  formatAttributes(attributes: UnformattedAttributes, additionalLogAttributes: LogAttributes): LogItem {
    const context = attributes.lambdaContext;
    // Only on lines of a request: a line with another invocation's context (the usage
    // aggregator's, in the same process under `npm start`) or none gets no request fields.
    const request = (invocationStore()?.get(REQUEST_KEY) as Request | undefined) ?? this.#request;
    const own = request !== undefined && context?.awsRequestId === request.awsRequestId ? request.fields : undefined;
    return new LogItem({
      attributes: {
        level: attributes.logLevel,
        message: attributes.message,
        timestamp: this.formatTimestamp(attributes.timestamp),
        service: attributes.serviceName,
        cold_start: context?.coldStart,
        function_arn: context?.invokedFunctionArn,
        function_memory_size: context?.memoryLimitInMB,
        function_name: context?.functionName,
        function_request_id: context?.awsRequestId,
        sampling_rate: attributes.sampleRateValue,
        xray_trace_id: attributes.xRayTraceId,
        tenant_id: context?.tenantId,
      },
    }).addAttributes(own ? { ...own, ...additionalLogAttributes } : additionalLogAttributes);
  }
}
