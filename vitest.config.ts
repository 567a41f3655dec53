import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineConfig } from "vitest/config";

// Tests (and the CLI processes they start, which inherit the environment) authenticate journals
// with a throwaway key, never the real ~/.config/harness/journal.key. The directory is removed by
// test/support/global-teardown.ts.
const keyFile = join(mkdtempSync(join(tmpdir(), "harness-test-key-")), "journal.key");
process.env.HARNESS_KEY_FILE = keyFile;

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    env: { HARNESS_KEY_FILE: keyFile },
    globalSetup: ["test/support/global-teardown.ts", "test/support/global-database.ts"],
  },
});
