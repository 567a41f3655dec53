import { describe, expect, it } from "vitest";
import { parseJsonObject } from "../../src/shared/json.js";
import { ownerLiveness, parseProcessOwner, thisProcess } from "../../src/shared/process-owner.js";

describe("process owners of locks", () => {
  it("parses only well-formed owner fields", () => {
    expect(parseProcessOwner({ pid: 12, host: "h", proc_start: null, extra: 1 })).toEqual({
      pid: 12,
      host: "h",
      proc_start: null,
    });
    for (const bad of [
      { pid: 0, host: "h", proc_start: null },
      { pid: -3, host: "h", proc_start: null },
      { pid: 1.5, host: "h", proc_start: null },
      { pid: 1, host: 2, proc_start: null },
      { pid: 1, host: "h", proc_start: 5 },
    ]) {
      expect(parseProcessOwner(bad)).toBeUndefined();
    }
    expect(parseJsonObject("[1]")).toBeUndefined();
    expect(parseJsonObject("{")).toBeUndefined();
    expect(parseJsonObject('{"a":1}')).toEqual({ a: 1 });
  });

  it("judges liveness only from evidence on this host", () => {
    const self = thisProcess();
    expect(ownerLiveness(self)).toEqual({ state: "alive" });
    expect(ownerLiveness({ ...self, host: `${self.host}-elsewhere` }).state).toBe("unknown");
    if (self.proc_start !== null) {
      expect(ownerLiveness({ ...self, proc_start: `${self.proc_start}9` })).toMatchObject({ state: "gone" });
    }
  });
});
