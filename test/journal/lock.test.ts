import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type LockOwner, unlockSession } from "../../src/journal/lock.js";
import { repairJournal } from "../../src/journal/repair.js";
import { processStartTime } from "../../src/shared/proc-stat.js";
import { deadPid } from "../support/processes.js";
import { input, rejection } from "./contract.js";
import { lockPath, seedSession, type TempHarness, tempHarness } from "./helpers.js";

const children: ChildProcess[] = [];

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

function sleepingChild(): ChildProcess {
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
  children.push(child);
  return child;
}

async function waitForProcStart(pid: number): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const start = processStartTime(pid);
    if (start !== null) return start;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no /proc entry for ${pid}`);
}

function writeLock(h: TempHarness, sessionId: string, owner: LockOwner | string): string {
  const text = typeof owner === "string" ? owner : `${JSON.stringify(owner)}\n`;
  writeFileSync(lockPath(h.harnessDir, sessionId), text);
  return text;
}

describe("writer lock ownership", () => {
  let h: TempHarness;
  beforeEach(() => {
    h = tempHarness();
  });
  afterEach(async () => {
    for (const child of children.splice(0)) {
      child.kill("SIGKILL");
      await exited(child);
    }
    h.cleanup();
  });

  it("reports the lock of a dead pid as STALE_LOCK with the unlock command, and keeps it", async () => {
    await seedSession(h, "s1", 2);
    const pid = await deadPid();
    const text = writeLock(h, "s1", {
      pid,
      host: hostname(),
      started_at: "2025-01-01T00:00:00.000Z",
      proc_start: null,
    });

    const error = await rejection(h.store.openWriter("s1", { create: false }));
    expect(error.code).toBe("STALE_LOCK");
    expect(error.message).toContain("harness unlock s1");
    expect(error.message).toContain(`pid ${pid}`);
    expect(error.message).toContain("gone");
    expect(readFileSync(lockPath(h.harnessDir, "s1"), "utf8")).toBe(text);
    expect((await rejection(repairJournal(h.harnessDir, "s1"))).code).toBe("STALE_LOCK");
    expect(readFileSync(lockPath(h.harnessDir, "s1"), "utf8")).toBe(text);

    const result = await unlockSession(h.harnessDir, "s1");
    expect(result).toMatchObject({ outcome: "removed", forced: false, status: { state: "gone" } });
    expect(existsSync(lockPath(h.harnessDir, "s1"))).toBe(false);
    const writer = await h.store.openWriter("s1", { create: false });
    expect(writer.length).toBe(2);
    await writer.close();
  });

  it("does not remove the lock of a live process without force", async () => {
    await seedSession(h, "s1", 1);
    const child = sleepingChild();
    const pid = child.pid!;
    const owner = {
      pid,
      host: hostname(),
      started_at: "2025-01-01T00:00:00.000Z",
      proc_start: await waitForProcStart(pid),
    };
    const text = writeLock(h, "s1", owner);

    const error = await rejection(h.store.openWriter("s1", { create: false }));
    expect(error.code).toBe("LOCKED");
    expect(error.message).toContain(`pid ${pid} on host ${hostname()}, started 2025-01-01T00:00:00.000Z`);
    expect((await rejection(repairJournal(h.harnessDir, "s1"))).code).toBe("LOCKED");

    const refused = await unlockSession(h.harnessDir, "s1");
    expect(refused).toMatchObject({ outcome: "refused", status: { state: "alive", owner } });
    expect(readFileSync(lockPath(h.harnessDir, "s1"), "utf8")).toBe(text);

    const forced = await unlockSession(h.harnessDir, "s1", { force: true });
    expect(forced).toMatchObject({ outcome: "removed", forced: true });
    expect(existsSync(lockPath(h.harnessDir, "s1"))).toBe(false);
    expect(await unlockSession(h.harnessDir, "s1")).toEqual({ outcome: "no_lock" });
  });

  it("treats a live pid with another start time as a reused pid, so the lock is stale", async () => {
    await seedSession(h, "s1", 1);
    const child = sleepingChild();
    const pid = child.pid!;
    const start = await waitForProcStart(pid);
    writeLock(h, "s1", {
      pid,
      host: hostname(),
      started_at: "2025-01-01T00:00:00.000Z",
      proc_start: `${start}1`,
    });
    const error = await rejection(h.store.openWriter("s1", { create: false }));
    expect(error.code).toBe("STALE_LOCK");
    expect(error.message).toContain("pid reused");
  });

  it("cannot judge locks from another host or unreadable locks, so they need force", async () => {
    await seedSession(h, "s1", 1);
    const pid = await deadPid();
    for (const lock of [
      { pid, host: `not-${hostname()}`, started_at: "2025-01-01T00:00:00.000Z", proc_start: null },
      "",
      '{"pid":0,"host":"x"}',
      '{"pid":-1,"host":"x","started_at":"y","proc_start":null}',
    ]) {
      const text = writeLock(h, "s1", lock);
      const error = await rejection(h.store.openWriter("s1", { create: false }));
      expect(error.code).toBe("LOCKED");
      expect(error.message).toContain("harness unlock s1 --force");
      expect(await unlockSession(h.harnessDir, "s1")).toMatchObject({
        outcome: "refused",
        status: { state: "unknown" },
      });
      expect(readFileSync(lockPath(h.harnessDir, "s1"), "utf8")).toBe(text);
    }
    expect(await unlockSession(h.harnessDir, "s1", { force: true })).toMatchObject({ outcome: "removed" });
  });

  it("reports the lock of a writer that was SIGKILLed as stale", async () => {
    const fixture = join(import.meta.dirname, "fixtures", "hold-lock.ts");
    const viteNode = join(process.cwd(), "node_modules", "vite-node", "vite-node.mjs");
    const child = spawn(process.execPath, [viteNode, fixture, h.harnessDir, "s1"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(child);
    const ready = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("\n")) resolve(out.trim());
      });
      child.once("exit", (code) => reject(new Error(`child exited early (${code})`)));
    });
    expect(ready).toBe(`ready ${child.pid}`);
    const owner = JSON.parse(readFileSync(lockPath(h.harnessDir, "s1"), "utf8"));
    expect(owner.pid).toBe(child.pid);

    const live = await rejection(h.store.openWriter("s1", { create: false }));
    expect(live.code).toBe("LOCKED");
    child.kill("SIGKILL");
    await exited(child);

    const stale = await rejection(h.store.openWriter("s1", { create: false }));
    expect(stale.code).toBe("STALE_LOCK");
    expect(stale.message).toContain("harness unlock s1");
    expect((await h.store.read("s1")).map((r) => r.data)).toEqual([{ text: "held by a child" }]);
    expect((await unlockSession(h.harnessDir, "s1")).outcome).toBe("removed");
    const writer = await h.store.openWriter("s1", { create: false });
    const [next] = await writer.append([input("after the crash")]);
    expect(next?.seq).toBe(1);
    await writer.close();
  }, 60_000);

  it("takes over a provably stale lock only when asked to recover, and reports whose it was", async () => {
    await seedSession(h, "s1", 2);
    const pid = await deadPid();
    const owner: LockOwner = {
      pid,
      host: hostname(),
      started_at: "2025-01-01T00:00:00.000Z",
      proc_start: "1",
    };
    writeLock(h, "s1", owner);
    expect((await rejection(h.store.openWriter("s1", { create: false }))).code).toBe("STALE_LOCK");
    const writer = await h.store.openWriter("s1", { create: false, recoverStaleLock: true });
    expect(writer.recoveredLock).toEqual({ owner, reason: `no process ${pid} exists` });
    const lock = JSON.parse(readFileSync(lockPath(h.harnessDir, "s1"), "utf8")) as LockOwner;
    expect(lock.pid).toBe(process.pid);
    expect(existsSync(`${lockPath(h.harnessDir, "s1")}.recover`)).toBe(false);
    await writer.append([input("after takeover")]);
    await writer.close();
    expect(existsSync(lockPath(h.harnessDir, "s1"))).toBe(false);
  });

  it("takes over the lock of a reused pid (live, other start time), never a live owner's or another host's", async () => {
    await seedSession(h, "s1", 1);
    const child = sleepingChild();
    const start = await waitForProcStart(child.pid!);
    const live = writeLock(h, "s1", {
      pid: child.pid!,
      host: hostname(),
      started_at: "t",
      proc_start: start,
    });
    expect((await rejection(h.store.openWriter("s1", { create: false, recoverStaleLock: true }))).code).toBe(
      "LOCKED",
    );
    expect(readFileSync(lockPath(h.harnessDir, "s1"), "utf8")).toBe(live);
    const remote = writeLock(h, "s1", {
      pid: 1,
      host: `${hostname()}-elsewhere`,
      started_at: "t",
      proc_start: null,
    });
    const refused = await rejection(h.store.openWriter("s1", { create: false, recoverStaleLock: true }));
    expect(refused.code).toBe("LOCKED");
    expect(refused.message).toContain("--force");
    expect(readFileSync(lockPath(h.harnessDir, "s1"), "utf8")).toBe(remote);
    writeLock(h, "s1", "not an owner record");
    expect((await rejection(h.store.openWriter("s1", { create: false, recoverStaleLock: true }))).code).toBe(
      "LOCKED",
    );
    writeLock(h, "s1", { pid: child.pid!, host: hostname(), started_at: "t", proc_start: `${start}0` });
    const writer = await h.store.openWriter("s1", { create: false, recoverStaleLock: true });
    expect(writer.recoveredLock?.reason).toContain("pid reused");
    await writer.close();
  });

  it("refuses a takeover while another recoverer holds the recovery file", async () => {
    await seedSession(h, "s1", 1);
    const stale = writeLock(h, "s1", {
      pid: await deadPid(),
      host: hostname(),
      started_at: "t",
      proc_start: null,
    });
    writeFileSync(`${lockPath(h.harnessDir, "s1")}.recover`, "");
    const refused = await rejection(h.store.openWriter("s1", { create: false, recoverStaleLock: true }));
    expect(refused.code).toBe("LOCKED");
    expect(refused.message).toContain("taking over");
    expect(readFileSync(lockPath(h.harnessDir, "s1"), "utf8")).toBe(stale);
  });
});
