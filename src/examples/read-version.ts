import type { ModelMessage } from "../index.js";

/**
 * The `version:` the last successful read_file observation reported: what a scripted model binds
 * its edit to (the demo and the learning lessons both script that step).
 */
export function lastReadVersion(messages: readonly ModelMessage[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as ModelMessage;
    if (message.role === "tool" && message.name === "read_file" && message.status === "ok") {
      return /^version: ([0-9a-f]{64})$/m.exec(message.content)?.[1];
    }
  }
  return undefined;
}
