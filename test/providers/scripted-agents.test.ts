import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { StreamEvent } from "../../src/protocol/types.js";
import type { Provider } from "../../src/providers/provider.js";
import { ScriptedProvider } from "../../src/providers/scripted/provider.js";
import { ScriptError } from "../../src/providers/scripted/script.js";
import { MAX_AGENT_DEPTH } from "../../src/shared/agent-label.js";
import { collect, request } from "./helpers/collect.js";

/** The text of the reply `provider` gives to its `ordinal`-th request, or its error. */
async function textOf(provider: Provider, ordinal: number, step = ordinal): Promise<string> {
  const { events, error } = await collect(provider, request({ ordinal, step }));
  if (error) return `ERROR ${error.code} retryable=${error.retryable}: ${error.message}`;
  return events
    .filter((event): event is Extract<StreamEvent, { type: "text_delta" }> => event.type === "text_delta")
    .map((event) => event.text)
    .join("");
}

const reply = (text: string) => ({ text });

const NESTED = {
  replies: [reply("parent 1"), reply("parent 2")],
  agents: {
    helper: {
      replies: [reply("helper 1"), reply("helper 2")],
      agents: { deep_1: { replies: [reply("deep 1")] } },
    },
    "other-2": { replies: [reply("other 1")] },
  },
};

describe("a script's replies for sub-agents", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "harness-scripted-agents-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function scriptFile(name: string, content: string): string {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  }

  it("plays each sub-agent's own replies from a JSON file, counted from its own first request, two levels deep", async () => {
    const parent = await ScriptedProvider.load(scriptFile("nested.json", JSON.stringify(NESTED)));
    const helper = parent.forAgent("helper");
    const deep = helper.forAgent("deep_1");
    const other = parent.forAgent("other-2");
    // Interleaved as a parent and its sub-agents would ask: each answers by its own ordinal.
    expect(await textOf(parent, 0)).toBe("parent 1");
    expect(await textOf(helper, 0)).toBe("helper 1");
    expect(await textOf(deep, 0)).toBe("deep 1");
    expect(await textOf(helper, 1)).toBe("helper 2");
    expect(await textOf(other, 0)).toBe("other 1");
    expect(await textOf(parent, 1)).toBe("parent 2");
    // Past its own list, a sub-agent's request fails naming it, and is not retried.
    expect(await textOf(helper, 2)).toBe(
      "ERROR SCRIPT_ERROR retryable=false: the script has no reply #3 for sub-agent helper (it has 2)",
    );
    expect(await textOf(deep, 1)).toContain("no reply #2 for sub-agent helper/deep_1");
    expect(deep.agent).toBe("helper/deep_1");
    expect(parent.agent).toBe("");
  });

  it("gives each sub-agent an identity that follows from the script's and the path alone", async () => {
    const path = scriptFile("nested.json", JSON.stringify(NESTED));
    const parent = await ScriptedProvider.load(path);
    const deep = parent.forAgent("helper").forAgent("deep_1");
    expect(parent.identity).toEqual({ kind: "scripted", name: "nested.json", sha256: expect.any(String) });
    expect(deep.identity).toEqual({ ...parent.identity, name: "nested.json#helper/deep_1" });
    // Loaded again (a resume), the same path gives the same identity.
    const again = await ScriptedProvider.load(path);
    expect(again.forAgent("helper").forAgent("deep_1").identity).toEqual(deep.identity);
    expect(parent.forAgent("helper").identity).toEqual({ ...parent.identity, name: "nested.json#helper" });
    // The parent's own identity is what it was before sub-agents existed.
    const flat = await ScriptedProvider.load(scriptFile("flat.json", JSON.stringify({ replies: [] })));
    expect(Object.keys(flat.identity).sort()).toEqual(["kind", "name", "sha256"]);
  });

  it("fails every request of a sub-agent the script has no replies for, naming its path", async () => {
    const parent = ScriptedProvider.fromScript(NESTED, "inline.json");
    const missing = parent.forAgent("helper").forAgent("ghost");
    const expected =
      'ERROR SCRIPT_ERROR retryable=false: the script has no replies for sub-agent helper/ghost (its "agents" hold no entry on that path)';
    expect(await textOf(missing, 0)).toBe(expected);
    expect(await textOf(missing, 3)).toBe(expected);
    const compaction = await collect(missing, request({ purpose: "compaction" }));
    expect(compaction.error?.message).toBe(expected.replace(/^ERROR SCRIPT_ERROR retryable=false: /, ""));
    // Below a missing sub-agent nothing is scripted either.
    expect(await textOf(missing.forAgent("below"), 0)).toContain("sub-agent helper/ghost/below (");
    // A script with no "agents" at all: the same.
    expect(await textOf(ScriptedProvider.fromTurns([reply("only")]).forAgent("x"), 0)).toContain(
      "no replies for sub-agent x (",
    );
  });

  it("asks a .mjs script with the sub-agent path, and a two-argument script still answers", async () => {
    const withPath = await ScriptedProvider.load(
      scriptFile(
        "paths.mjs",
        "export default (messages, step, agent) => ({ text: '[' + agent + '] step ' + step + ' of ' + messages.length });\n",
      ),
    );
    expect(await textOf(withPath, 0, 4)).toBe("[] step 4 of 1");
    expect(await textOf(withPath.forAgent("a"), 0, 1)).toBe("[a] step 1 of 1");
    expect(await textOf(withPath.forAgent("a").forAgent("b"), 2)).toBe("[a/b] step 2 of 1");
    expect(withPath.forAgent("a").forAgent("b").identity).toEqual({
      ...withPath.identity,
      name: "paths.mjs#a/b",
    });
    const twoArguments = await ScriptedProvider.load(
      scriptFile("old.mjs", "export default (messages, step) => ({ text: 'step ' + step });\n"),
    );
    expect(await textOf(twoArguments, 0, 3)).toBe("step 3");
    expect(await textOf(twoArguments.forAgent("child"), 0, 5)).toBe("step 5");
  });

  it("refuses a script with unknown keys or bad labels at any level", async () => {
    const refused = async (script: unknown): Promise<string> => {
      const path = scriptFile("bad.json", JSON.stringify(script));
      const error = await ScriptedProvider.load(path).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(ScriptError);
      return (error as ScriptError).message;
    };
    expect(await refused({ replies: [], extra: 1 })).toContain("extra");
    expect(await refused({ replies: [], agents: { helper: { replies: [], agent: {} } } })).toContain("agent");
    expect(await refused({ replies: [], agents: { helper: {} } })).toContain("replies");
    expect(await refused({ replies: [], agents: { helper: { replies: [{ txt: "x" }] } } })).toContain(
      "bad.json",
    );
    for (const label of ["a.b", "-x", "", "artifacts", "l".repeat(33), "a/b", "constructor.x"]) {
      expect(await refused({ replies: [], agents: { [label]: { replies: [] } } })).toContain(
        "a label is 1-32",
      );
    }
    expect(
      await refused({ replies: [], agents: { ok: { replies: [], agents: { "..": { replies: [] } } } } }),
    ).toContain("a label is 1-32");
    expect(await refused({ replies: [], agents: [] })).toContain("bad.json");
    // Deeper than sub-agents go.
    let tooDeep: Record<string, unknown> = { replies: [] };
    for (let level = 0; level <= MAX_AGENT_DEPTH; level++) tooDeep = { replies: [], agents: { a: tooDeep } };
    expect(await refused(tooDeep)).toContain(`nested deeper than sub-agents go (${MAX_AGENT_DEPTH} levels)`);
    // The data-only loader reads the same format the same way.
    const data = await ScriptedProvider.loadData(scriptFile("data.json", JSON.stringify(NESTED)));
    expect(await textOf(data.forAgent("helper").forAgent("deep_1"), 0)).toBe("deep 1");
  });

  it("finds a label named like an object's property only when the script holds it", async () => {
    const parent = ScriptedProvider.fromScript({
      replies: [],
      agents: { toString: { replies: [reply("ts")] } },
    });
    expect(await textOf(parent.forAgent("toString"), 0)).toBe("ts");
    expect(await textOf(parent.forAgent("constructor"), 0)).toContain(
      "no replies for sub-agent constructor (",
    );
  });

  it("refuses to make a provider for a label that is not one, or deeper than sub-agents go", () => {
    const parent = ScriptedProvider.fromTurns([]);
    for (const label of ["a.b", "", "a/b", "artifacts", "x".repeat(33)]) {
      expect(() => parent.forAgent(label)).toThrow(TypeError);
    }
    let deep = parent;
    for (let level = 0; level < MAX_AGENT_DEPTH; level++) deep = deep.forAgent(`l${level}`);
    expect(deep.agent.split("/")).toHaveLength(MAX_AGENT_DEPTH);
    expect(() => deep.forAgent("one-more")).toThrow(/deeper than sub-agents go/);
  });
});
