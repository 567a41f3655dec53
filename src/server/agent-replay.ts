import type { JournalStore } from "../journal/store.js";
import type { JsonObject } from "../shared/json.js";
import type { Notification } from "./notifications.js";

/**
 * A session's sub-agents as their journals hold them now, each record an `agent/record`
 * notification tagged with its agent path (`LABEL`, `LABEL/SUB` for a grandchild), children in
 * id order and each child's records before its own children's. Live, these notifications are sent
 * as the children's journals take them and never journaled in the parent's; a subscriber that
 * comes later (a viewer opened after a child ran) gets them here, after the parent's replay, so
 * it can rebuild each child's timeline. A child journal that cannot be read is left out (its
 * parent's records still say how it ended); a viewer ignores a record it already has (by seq).
 */
export async function agentReplay(
  store: JournalStore,
  session: string,
  root = session,
  prefix = "",
): Promise<Notification[]> {
  const out: Notification[] = [];
  const children = await store.listChildren(session).catch(() => []);
  for (const child of children) {
    const path = `${prefix}${child.slice(session.length + 1)}`;
    const records = await store.read(child).catch(() => undefined);
    if (records === undefined) continue;
    for (const record of records)
      out.push({
        method: "agent/record",
        params: { session: root, agent: path, record: record as unknown as JsonObject },
      });
    out.push(...(await agentReplay(store, child, root, `${path}/`)));
  }
  return out;
}
