import type { ItemList, ItemPageQuery, ResponseItem } from '@trainyard/contracts';
import { ServiceError } from '@trainyard/contracts';

/** An item as a list reads it: its order of being added, its id, the item itself. */
export interface ItemRow {
  seq: bigint;
  itemId: string;
  item: ResponseItem;
}

/**
 * The page bounds of a list of items: rows strictly after `after` in the list's order (found
 * by `seqOf`; an id not in the list is a 400 naming `after`), one more than `limit` asked
 * for, so that the answer knows whether there are more.
 */
export async function pageBounds(
  query: ItemPageQuery,
  seqOf: (itemId: string) => Promise<bigint | null>,
): Promise<{ seq?: { gt: bigint } | { lt: bigint }; take: number; order: 'asc' | 'desc' }> {
  let seq: { gt: bigint } | { lt: bigint } | undefined;
  if (query.after !== undefined) {
    const at = await seqOf(query.after);
    if (at === null) throw ServiceError.invalid(`after: no item ${JSON.stringify(query.after.slice(0, 100))} in this list`, 'after');
    seq = query.order === 'asc' ? { gt: at } : { lt: at };
  }
  return { seq, take: query.limit + 1, order: query.order };
}

/** OpenAI's list envelope over rows read with pageBounds (one more than the limit). */
export function itemList(rows: ItemRow[], limit: number): ItemList {
  const data = rows.slice(0, limit).map((row) => row.item);
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
}
