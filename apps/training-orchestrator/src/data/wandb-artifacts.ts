import { Injectable } from '@nestjs/common';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { createHash } from 'node:crypto';
import { OrchestratorConfig } from '../config/orchestrator.config';
import { OutboundFetch, OutboundFetchError } from './outbound-fetch';

/** `wandb-artifact:///{entity}/{project}/{name}[:{version or alias}]`, as ART's train_sft sends it. */
export interface WandbArtifactRef {
  entity: string;
  project: string;
  name: string;
  /** `v0`, `v12`, or an alias such as `latest`. */
  version: string;
}

const ARTIFACT_URL = /^wandb-artifact:\/\/\/([^/:]+)\/([^/:]+)\/([^/:]+)(?::([^/:]+))?$/;

export function parseWandbArtifactUrl(reference: string): WandbArtifactRef | null {
  const m = ARTIFACT_URL.exec(reference);
  return m ? { entity: m[1], project: m[2], name: m[3], version: m[4] ?? 'latest' } : null;
}

// The three queries of the wandb SDK's artifact download path (wandb/sdk/artifacts/artifact.py:
// Artifact._from_name, _fetch_manifest, _fetch_file_urls), with the same operation names and
// variables, selecting the fields this download uses.
const ARTIFACT_MEMBERSHIP_BY_NAME = `query ArtifactMembershipByName($entity: String!, $project: String!, $name: String!) {
  project(name: $project, entityName: $entity) {
    artifactCollectionMembership(name: $name) {
      id
      versionIndex
      artifactCollection { name }
      artifact { id state }
    }
  }
}`;

const FETCH_ARTIFACT_MANIFEST = `query FetchArtifactManifest($id: ID!) {
  artifact(id: $id) {
    currentManifest { file { directUrl } }
  }
}`;

const GET_ARTIFACT_MEMBERSHIP_FILE_URLS = `query GetArtifactMembershipFileUrls($entity: String!, $project: String!, $collection: String!, $alias: String!, $cursor: String, $perPage: Int) {
  project(name: $project, entityName: $entity) {
    artifactCollection(name: $collection) {
      artifactMembership(aliasName: $alias) {
        files(after: $cursor, first: $perPage) {
          pageInfo { endCursor hasNextPage }
          edges { node { name directUrl } }
        }
      }
    }
  }
}`;

/** GraphQL answers and the manifest are small; the data file has the SFT size limit. */
const METADATA_MAX_BYTES = 4 * 1024 * 1024;
const FILES_PER_PAGE = 100;

interface ManifestEntry {
  digest: string;
  size?: number;
  ref?: string;
}

/**
 * Downloads the file of a W&B artifact the way the wandb SDK does, with this service's own
 * W&B credentials (WANDB_BASE_URL, WANDB_API_KEY): the collection membership by name, the
 * manifest (through its direct URL), the file's direct URL, then the file, checked against
 * the manifest's size and MD5. Every request goes through the outbound guard.
 */
@Injectable()
export class WandbArtifacts {
  constructor(
    private readonly outbound: OutboundFetch,
    private readonly config: OrchestratorConfig,
  ) {}

  get configured(): boolean {
    return this.config.WANDB_API_KEY !== '';
  }

  /** All requests of one download share one deadline, SFT_DATA_FETCH_TIMEOUT_MS. */
  async download(ref: WandbArtifactRef, maxBytes: number): Promise<Buffer> {
    const signal = AbortSignal.timeout(this.config.SFT_DATA_FETCH_TIMEOUT_MS);
    const shown = `${ref.entity}/${ref.project}/${ref.name}:${ref.version}`;
    const found = await this.graphql<MembershipData>(ARTIFACT_MEMBERSHIP_BY_NAME, { entity: ref.entity, project: ref.project, name: `${ref.name}:${ref.version}` }, signal);
    const membership = found.project?.artifactCollectionMembership;
    if (!membership?.artifact?.id) {
      throw ServiceError.invalid(`training_data_url: W&B artifact ${shown} was not found with this service's W&B credentials`, 'training_data_url');
    }
    if (membership.artifact.state && membership.artifact.state !== 'COMMITTED') {
      throw ServiceError.invalid(`training_data_url: W&B artifact ${shown} is ${membership.artifact.state}, not yet committed`, 'training_data_url');
    }

    const manifestUrl = (await this.graphql<ManifestData>(FETCH_ARTIFACT_MANIFEST, { id: membership.artifact.id }, signal)).artifact?.currentManifest?.file?.directUrl;
    if (!manifestUrl) throw new OutboundFetchError(`W&B gave no manifest for ${shown}`);
    const manifest = parseManifest((await this.outbound.fetch(toUrl(manifestUrl), { maxBytes: METADATA_MAX_BYTES, signal })).body);
    const [path, entry] = dataFile(manifest, shown);
    if (entry.size !== undefined && entry.size > maxBytes) {
      throw new ServiceError(ErrorCode.PayloadTooLarge, `training_data_url ${shown} is larger than the ${maxBytes} byte limit`, { param: 'training_data_url' });
    }

    const collection = membership.artifactCollection?.name ?? ref.name;
    const directUrl = await this.fileUrl(ref, collection, `v${membership.versionIndex}`, path, signal);
    const body = (await this.outbound.fetch(toUrl(directUrl), { maxBytes, signal })).body;
    if (entry.size !== undefined && body.byteLength !== entry.size) throw new OutboundFetchError(`${shown}/${path}: ${body.byteLength} bytes, the manifest says ${entry.size}`);
    if (createHash('md5').update(body).digest('base64') !== entry.digest) throw new OutboundFetchError(`${shown}/${path}: MD5 differs from the manifest's digest`);
    return body;
  }

  private async fileUrl(ref: WandbArtifactRef, collection: string, alias: string, path: string, signal: AbortSignal): Promise<string> {
    let cursor: string | null = null;
    for (;;) {
      const data: FilesData = await this.graphql<FilesData>(
        GET_ARTIFACT_MEMBERSHIP_FILE_URLS,
        { entity: ref.entity, project: ref.project, collection, alias, cursor, perPage: FILES_PER_PAGE },
        signal,
      );
      const files = data.project?.artifactCollection?.artifactMembership?.files;
      if (!files) throw new OutboundFetchError(`W&B listed no files for ${ref.entity}/${ref.project}/${collection}:${alias}`);
      const node = files.edges.map((e) => e.node).find((n) => n?.name === path);
      if (node?.directUrl) return node.directUrl;
      if (!files.pageInfo.hasNextPage || !files.pageInfo.endCursor) throw new OutboundFetchError(`W&B gave no URL for ${path}`);
      cursor = files.pageInfo.endCursor;
    }
  }

  /** POST {WANDB_BASE_URL}/graphql with the API key as HTTP Basic password, as the SDK authenticates. */
  private async graphql<T>(query: string, variables: Record<string, unknown>, signal: AbortSignal): Promise<T> {
    const url = new URL('graphql', this.config.WANDB_BASE_URL.endsWith('/') ? this.config.WANDB_BASE_URL : `${this.config.WANDB_BASE_URL}/`);
    const res = await this.outbound.fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Basic ${Buffer.from(`api:${this.config.WANDB_API_KEY}`).toString('base64')}`,
      },
      body: JSON.stringify({ query, variables }),
      maxBytes: METADATA_MAX_BYTES,
      signal,
    });
    let reply: { data?: T; errors?: { message?: string }[] };
    try {
      reply = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new OutboundFetchError('W&B GraphQL answered with something that is not JSON');
    }
    if (reply.errors?.length || !reply.data) throw new OutboundFetchError(`W&B GraphQL: ${reply.errors?.map((e) => e.message).join('; ') ?? 'no data'}`);
    return reply.data;
  }
}

interface MembershipData {
  project: { artifactCollectionMembership: { versionIndex: number; artifactCollection: { name: string } | null; artifact: { id: string; state?: string } | null } | null } | null;
}

interface ManifestData {
  artifact: { currentManifest: { file: { directUrl: string } | null } | null } | null;
}

interface FilesData {
  project: {
    artifactCollection: {
      artifactMembership: {
        files: { pageInfo: { endCursor: string | null; hasNextPage: boolean }; edges: { node: { name: string; directUrl: string } | null }[] } | null;
      } | null;
    } | null;
  } | null;
}

function toUrl(value: string): URL {
  try {
    return new URL(value);
  } catch {
    throw new OutboundFetchError('W&B gave an invalid URL');
  }
}

function parseManifest(body: Buffer): Record<string, ManifestEntry> {
  try {
    const manifest = JSON.parse(body.toString('utf8')) as { contents?: Record<string, ManifestEntry> };
    if (manifest.contents && typeof manifest.contents === 'object') return manifest.contents;
  } catch {
    // Reported below, as any other unusable manifest.
  }
  throw new OutboundFetchError('the W&B artifact manifest is not a manifest');
}

/**
 * The JSONL file in the artifact: its only stored file, or its only `.jsonl` file (ART's
 * train_sft uploads exactly one, `train.jsonl`). Reference entries point outside W&B
 * storage and are not followed.
 */
function dataFile(manifest: Record<string, ManifestEntry>, shown: string): [string, ManifestEntry] {
  const stored = Object.entries(manifest).filter(([, e]) => !e.ref);
  const jsonl = stored.filter(([p]) => p.endsWith('.jsonl'));
  const pick = stored.length === 1 ? stored : jsonl;
  if (pick.length !== 1) {
    throw ServiceError.invalid(
      `training_data_url: W&B artifact ${shown} must hold exactly one stored file, or exactly one .jsonl file; it holds ${stored.length} (${jsonl.length} .jsonl)`,
      'training_data_url',
    );
  }
  return pick[0];
}
