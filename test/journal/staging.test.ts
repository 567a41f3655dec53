import { describe, expect, it } from "vitest";
import { Staging } from "../../src/journal/staging.js";

describe("Staging", () => {
  it("hands staged items to the next durable write together with its own, oldest first, as one write", () => {
    const writes: string[][] = [];
    const staging = new Staging<string, void>((items) => {
      writes.push([...items]);
    });
    staging.add(["a", "b"], false);
    staging.add(["c"], false);
    expect(writes).toEqual([]);
    staging.add(["d"], true);
    expect(writes).toEqual([["a", "b", "c", "d"]]);
    // Nothing staged: a durable append with nothing new writes nothing.
    staging.add([], true);
    expect(staging.flush()).toBeUndefined();
    expect(writes).toHaveLength(1);
    staging.add(["e"], false);
    staging.add([], true);
    expect(writes).toEqual([["a", "b", "c", "d"], ["e"]]);
  });

  it("stays synchronous over a synchronous write, so an append never yields between writing and recording", () => {
    let written = 0;
    const staging = new Staging<number, void>((items) => {
      written += items.length;
    });
    expect(staging.add([1, 2], true)).toBeUndefined();
    expect(written).toBe(2);
  });

  it("drops what it handed to a write that failed: the staged tail is lost as in a crash, never written later", async () => {
    const writes: string[][] = [];
    let fail = true;
    const staging = new Staging<string, Promise<void>>(async (items) => {
      if (fail) throw new Error("disk full");
      writes.push([...items]);
    });
    staging.add(["staged"], false);
    await expect(staging.add(["durable"], true)).rejects.toThrow("disk full");
    fail = false;
    await staging.flush();
    expect(writes).toEqual([]);
    staging.add(["later"], false);
    await staging.flushAtClose();
    expect(writes).toEqual([["later"]]);
  });

  it("writes what is staged at close and swallows a failure there", () => {
    const tried: string[][] = [];
    const staging = new Staging<string, void>((items) => {
      tried.push([...items]);
      throw new Error("gone");
    });
    staging.add(["staged"], false);
    // Synchronous over a synchronous write: done before close returns, nothing thrown.
    expect(staging.flushAtClose()).toBeUndefined();
    expect(tried).toEqual([["staged"]]);
  });

  it("swallows an asynchronous store's failure at close too", async () => {
    const staging = new Staging<string, Promise<void>>(async () => {
      throw new Error("connection lost");
    });
    staging.add(["staged"], false);
    await expect(staging.flushAtClose()).resolves.toBeUndefined();
  });
});
