import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startS3Server } from '@trainyard/testing';
import { S3ArtifactStore } from '../src';
import { describeArtifactStoreContract } from './artifact-store.contract';

// Against a real S3-compatible server (s3rver), through the same client a deployment uses.
describeArtifactStoreContract('S3ArtifactStore', async () => {
  const s3 = await startS3Server();
  const options = { endpoint: s3.endpoint, bucket: s3.bucket, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, forcePathStyle: true, prefix: 'test/' };
  const store = new S3ArtifactStore(options);
  const raw = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
  return {
    store,
    corrupt: async (sha256, data) => {
      await raw.send(new PutObjectCommand({ Bucket: s3.bucket, Key: `test/sha256/${sha256}`, Body: data }));
    },
    stop: async () => {
      store.destroy();
      raw.destroy();
      await s3.stop();
    },
  };
});
