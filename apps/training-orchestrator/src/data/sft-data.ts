import { ServiceError, TrainingConversation } from '@trainyard/contracts';
import { parseSftJsonl } from '@trainyard/art';
import { issueAt } from '../jobs/issues';

/** Problems reported for one file; a file with thousands of bad lines still fits one error. */
const REPORTED_LINES = 20;

/**
 * The conversations of an SFT JSONL file (`{"messages": [...], "tools": [...]?}` per line, the
 * last message the assistant's), or a validation error at `field` naming each bad line by its
 * number, `label` before it ("training data line 3 is not valid JSON").
 */
export function sftConversations(text: string, field: string, label: string): TrainingConversation[] {
  const { conversations, issues } = parseSftJsonl(text);
  if (issues.length > 0) throw ServiceError.validation(issues.slice(0, REPORTED_LINES).map((i) => issueAt(['body', field], `${label}${i.path} ${i.message}`)));
  return conversations;
}
