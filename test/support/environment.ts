/**
 * Jest's Node environment plus an embedded DynamoDB of the test file's own, in its worker: files
 * running side by side never queue behind each other's database, so a test's timeouts measure
 * only its own calls. The endpoint is DYNAMODB_ENDPOINT, set before the file's modules load.
 */
import { TestEnvironment } from 'jest-environment-node';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo';

export default class EmbeddedDynamoEnvironment extends TestEnvironment {
  private dynamo: EmbeddedDynamo | undefined;

  override async setup(): Promise<void> {
    await super.setup();
    this.dynamo = await startEmbeddedDynamo();
    this.global.process.env.DYNAMODB_ENDPOINT = this.dynamo.endpoint;
  }

  override async teardown(): Promise<void> {
    await this.dynamo?.close();
    await super.teardown();
  }
}
