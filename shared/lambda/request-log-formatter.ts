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

/**
 * Requests whose fields are held: the latest ones started, one per invocation in flight. Far above
 * the concurrency of one environment (Lambda Managed Instances; the local gateway's 64); a line
 * logged by a request 256 newer ones have started since goes without its fields.
 */
export const REQUESTS_HELD = 256;

export class RequestLogFormatter extends LogFormatter implements RequestLogFields {
  /**
   * The latest requests' Lambda request ids and fields, in a ring: a line finds its request's by
   * the Lambda context Powertools gives it, which Powertools keeps per invocation where one
   * environment serves several at once (Lambda Managed Instances, and the local gateway and tests
   * through lib/local/invoke.ts). A ring, not a Map or an InvocationScoped value: each of those cost
   * 1–4 µs a request (hashing a new id; reading the environment), and most requests log nothing
   * (docs/performance.md "Where the µs go").
   */
  readonly #ids: (string | undefined)[] = new Array<string | undefined>(REQUESTS_HELD).fill(undefined);
  readonly #fields: (LogAttributes | undefined)[] = new Array<LogAttributes | undefined>(REQUESTS_HELD).fill(undefined);
  #next = 0;

  /** The request being handled: its fields go on the lines logged with its Lambda context. */
  setRequest(awsRequestId: string, fields: { request_id: string; route: string }): void {
    const at = this.#next;
    this.#ids[at] = awsRequestId;
    this.#fields[at] = fields;
    this.#next = (at + 1) % REQUESTS_HELD;
  }

  /** The fields of the request with this Lambda request id, newest first; none once 256 newer ones started. */
  #fieldsOf(awsRequestId: string): LogAttributes | undefined {
    for (let back = 1; back <= REQUESTS_HELD; back += 1) {
      const at = (this.#next - back + REQUESTS_HELD) % REQUESTS_HELD;
      if (this.#ids[at] === awsRequestId) return this.#fields[at];
    }
    return undefined;
  }

  formatAttributes(attributes: UnformattedAttributes, additionalLogAttributes: LogAttributes): LogItem {
    const context = attributes.lambdaContext;
    // Only on lines of a request: a line with another invocation's context (the usage
    // aggregator's, in the same process under `npm start`) or none gets no request fields.
    const own = context === undefined ? undefined : this.#fieldsOf(context.awsRequestId);
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
