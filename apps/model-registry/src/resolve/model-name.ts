import { SERVING_NAME_SCHEME } from '@trainyard/contracts';

/** Which checkpoint of a trained model a name asks for. */
export type StepSelector = { kind: 'latest' } | { kind: 'step'; step: number };

export type ParsedModelName =
  | { kind: 'base'; id: string }
  | { kind: 'trained'; entity: string; project: string; name: string; selector: StepSelector };

const SEGMENT = /^[^/:\s]+$/;
const SUFFIX = /^(?<name>[^:]+)(?::(?:(?<latest>latest)|step(?<step>\d+)|v(?<version>\d+)))?$/;

/**
 * Reads the model names chat completions accept (contracts' servingName writes the first two):
 *   wandb-artifact:///{entity}/{project}/{name}          newest checkpoint
 *   ...:step{N}, ...:latest, ...:v{K} (version K is step K)
 *   {entity}/{project}/{name}[:step{N}]                   the same, without the scheme
 * and anything else as a base model id (`name` or `org/name`). Returns undefined for a
 * name that can be neither.
 */
export function parseModelName(model: string): ParsedModelName | undefined {
  const artifact = model.startsWith(SERVING_NAME_SCHEME);
  const path = artifact ? model.slice(SERVING_NAME_SCHEME.length) : model;
  const segments = path.split('/');
  if (segments.length !== 3) return artifact ? undefined : { kind: 'base', id: model };

  const [entity, project, last] = segments;
  const match = SUFFIX.exec(last);
  if (!match?.groups || ![entity, project, match.groups['name']].every((s) => SEGMENT.test(s))) return undefined;
  const { name, step, version } = match.groups;
  const pinned = step ?? version;
  const selector: StepSelector = pinned === undefined ? { kind: 'latest' } : { kind: 'step', step: Number(pinned) };
  if (selector.kind === 'step' && !Number.isSafeInteger(selector.step)) return undefined;
  return { kind: 'trained', entity, project, name, selector };
}
