/** One call made with a known key (docs/decisions.md "Usage records"). */
export interface UsageRecord {
  key_id: string;
  branch_id: string;
  method: string;
  /** The path as requested, stage prefix included. */
  path: string;
  /** The route template, e.g. `GET /v1/payment-providers/{id}`. */
  route: string;
  status: number;
  response_time_ms: number;
  timestamp: string;
  request_id: string;
}
