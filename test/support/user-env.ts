import { join } from "node:path";
import { tempDir } from "../e2e/helpers.js";
import { cliEnv } from "../e2e-providers/cli.js";

/**
 * The CLI's environment for a user of its own: a fresh home and a journal key no other user
 * shares (`name` tells their temporary directories apart), plus `extra`.
 */
export async function userEnv(name: string, extra: Record<string, string> = {}): Promise<NodeJS.ProcessEnv> {
  const home = await tempDir(`harness-${name}-home-`);
  return cliEnv(home, {
    HARNESS_KEY_FILE: join(await tempDir(`harness-${name}-key-`), "journal.key"),
    ...extra,
  });
}
