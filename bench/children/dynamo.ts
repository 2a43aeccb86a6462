/** The embedded DynamoDB of the end-to-end part, in a process of its own; sends its endpoint. */
import { startEmbeddedDynamo } from '../../lib/local/dynamo';

const dynamo = await startEmbeddedDynamo({ port: 0 });
process.send?.({ endpoint: dynamo.endpoint });
process.on('SIGTERM', () => void dynamo.close().then(() => process.exit(0)));
