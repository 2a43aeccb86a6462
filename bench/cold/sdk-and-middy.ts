/**
 * The import-time baseline of the cold-start proxy: only what any function of this shape must
 * load, the DynamoDB client, the document client with the three commands the handlers send,
 * and Middy, bundled with the same options as the functions. Re-exported so esbuild keeps them.
 */
export { DynamoDBClient } from '@aws-sdk/client-dynamodb';
export { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
export { default as middy } from '@middy/core';
