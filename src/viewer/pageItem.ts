/**
 * The live items as the viewer's page reads them: a turn's end carries its words (`endText`, from
 * src/domain/turnEnd.ts), so the page — plain browser modules, no build step — holds no copy of them.
 */
import type { StreamItem } from '../client';
import { turnEndText } from '../domain/turnEnd';

/** `item` as the page reads it: a `turn/end` event with `endText`, anything else as it is. */
export function pageItem(item: StreamItem): unknown {
  if (item.kind !== 'event' || item.event.type !== 'turn/end') return item;
  return { ...item, event: { ...item.event, endText: turnEndText(item.event.data.reason) } };
}
