import type { JournalStore } from "../../journal/store.js";
import type { EventData } from "../../journal/vocabulary.js";

export type ModeSwitch = EventData<"mode.switched">;

/**
 * Journal a write-mode switch (an editor's `session/set_mode`) under the session's writer lock,
 * between turns: the door checked it against the ceiling; recorded, a load reads it back.
 */
export async function recordModeSwitch(
  store: JournalStore,
  sessionId: string,
  data: ModeSwitch,
): Promise<void> {
  const writer = await store.openWriter(sessionId, { create: false });
  try {
    await writer.append([{ type: "mode.switched", data }]);
  } finally {
    await writer.close();
  }
}
