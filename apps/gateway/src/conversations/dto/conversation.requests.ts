import { ArrayMaxSize, ArrayMinSize, IsArray, IsObject, IsOptional } from 'class-validator';
import { IsMetadata } from '../../http/metadata';

/** Items a conversation takes in one call, as OpenAI allows. */
export const MAX_ITEMS_PER_CALL = 20;

/** POST /v1/conversations. Each item is checked where it becomes a stored item (toInputEntries), which names it. */
export class CreateConversationRequest {
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_ITEMS_PER_CALL)
  @IsObject({ each: true })
  items?: Record<string, unknown>[] | null;

  @IsOptional()
  @IsMetadata()
  metadata?: Record<string, string> | null;
}

/** POST /v1/conversations/{id}: the metadata replaces what the conversation had. */
export class UpdateConversationRequest {
  @IsMetadata()
  metadata!: Record<string, string>;
}

/** POST /v1/conversations/{id}/items */
export class AddConversationItemsRequest {
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_ITEMS_PER_CALL)
  @IsObject({ each: true })
  items!: Record<string, unknown>[];
}
