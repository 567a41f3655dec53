import { describe, expect, it } from "vitest";
import { SessionState } from "../../src/engine/state.js";
import { EVENT_TYPES } from "../../src/journal/vocabulary.js";

describe("the session fold", () => {
  it("has exactly one reducer per event type of the vocabulary", () => {
    // The type checker refuses a missing or unknown key; this holds the runtime object to the same list.
    expect(Object.keys(SessionState.reducers).sort()).toEqual([...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) expect(typeof SessionState.reducers[type], type).toBe("function");
  });
});
