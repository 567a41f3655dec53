import { createHmac, randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { JOURNAL_KEY_BYTES, JournalKey } from "../../src/journal/key.js";
import { journalKeyPath, loadJournalKey } from "../../src/journal/key-file.js";
import { JournalError } from "../../src/journal/store.js";

function refusal(action: () => unknown): JournalError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(JournalError);
    expect((error as JournalError).code).toBe("KEY");
    return error as JournalError;
  }
  throw new Error("expected a refusal");
}

describe("the journal key file", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "harness-key-test-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("lives at $HARNESS_KEY_FILE, else under $XDG_CONFIG_HOME, else ~/.config", () => {
    expect(journalKeyPath({ HARNESS_KEY_FILE: "/k/key" })).toBe("/k/key");
    expect(journalKeyPath({ XDG_CONFIG_HOME: "/xdg" })).toBe("/xdg/harness/journal.key");
    expect(journalKeyPath({ XDG_CONFIG_HOME: "relative" })).toMatch(/\/\.config\/harness\/journal\.key$/);
  });

  it("is created on first use with mode 0600 in a 0700 directory, and the same key is read back", () => {
    const path = join(dir, "config", "harness", "journal.key");
    const key = loadJournalKey({ path });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "config", "harness")).mode & 0o777).toBe(0o700);
    expect(readFileSync(path, "utf8")).toMatch(/^[0-9a-f]{64}\n$/);
    const again = loadJournalKey({ path: join(dir, "config", "harness", ".", "journal.key") });
    expect(again.id).toBe(key.id);
    expect(again.sign("a".repeat(64))).toBe(key.sign("a".repeat(64)));
    expect(key.id).not.toBe(JournalKey.ephemeral().id);
  });

  it("refuses a key others can read, a symlink, garbage, and a key inside the workspace", () => {
    const secret = "b".repeat(64);
    const readable = join(dir, "readable.key");
    writeFileSync(readable, `${secret}\n`, { mode: 0o600 });
    chmodSync(readable, 0o640);
    expect(refusal(() => loadJournalKey({ path: readable })).message).toContain(`chmod 600 ${readable}`);

    const target = join(dir, "target.key");
    writeFileSync(target, `${secret}\n`, { mode: 0o600 });
    const link = join(dir, "link.key");
    symlinkSync(target, link);
    expect(refusal(() => loadJournalKey({ path: link })).message).toContain("symbolic link");

    const garbage = join(dir, "garbage.key");
    writeFileSync(garbage, "not a key\n", { mode: 0o600 });
    expect(refusal(() => loadJournalKey({ path: garbage })).message).toContain("not a journal key");

    const workspace = join(dir, "repo");
    mkdirSync(join(workspace, ".config"), { recursive: true });
    const inside = join(workspace, ".config", "journal.key");
    expect(refusal(() => loadJournalKey({ path: inside, workspaceRoot: workspace })).message).toContain(
      "inside the workspace",
    );
    expect(() => statSync(inside)).toThrow();
    // Nothing is created inside the workspace on the way to refusing, not even a directory.
    const nested = join(workspace, "new-dir", "journal.key");
    refusal(() => loadJournalKey({ path: nested, workspaceRoot: workspace }));
    expect(() => statSync(join(workspace, "new-dir"))).toThrow();
    // Nor can a symlinked directory outside lead into it.
    const door = join(dir, "door");
    symlinkSync(workspace, door);
    refusal(() => loadJournalKey({ path: join(door, "journal.key"), workspaceRoot: workspace }));
  });

  it("refuses a key owned by another user", () => {
    // As root, a file given away to nobody; as any other user, a file root owns.
    let path = "/etc/passwd";
    if (process.getuid?.() === 0) {
      path = join(dir, "theirs.key");
      writeFileSync(path, `${"c".repeat(64)}\n`, { mode: 0o600 });
      chownSync(path, 65534, 65534);
    }
    expect(refusal(() => loadJournalKey({ path })).message).toContain("not by you");
  });
});

describe("journal key signatures", () => {
  it("are HMAC-SHA256 of the record hash under the secret, for record hashes and any other text", () => {
    for (let i = 0; i < 200; i++) {
      const secret = randomBytes(JOURNAL_KEY_BYTES);
      const key = JournalKey.fromSecret(secret);
      const recordHash = randomBytes(32).toString("hex");
      const other = i % 2 === 0 ? recordHash.toUpperCase() : `${recordHash}x`;
      for (const message of [recordHash, other, ""]) {
        expect(key.sign(message)).toBe(createHmac("sha256", secret).update(message).digest("hex"));
      }
    }
  });

  it("do not verify under another key", () => {
    const recordHash = "ab".repeat(32);
    const mac = JournalKey.ephemeral().sign(recordHash);
    expect(JournalKey.ephemeral().verifies(recordHash, mac)).toBe(false);
  });
});
