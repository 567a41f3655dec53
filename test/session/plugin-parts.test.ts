import { describe, expect, it } from "vitest";
import type { PluginEntry } from "../../src/session/extensions/discover.js";
import { pluginHookSources } from "../../src/session/extensions/plugin-parts.js";

/** A plugin's hooks: only a usable plugin's, only command hooks (a module would run unsandboxed). */

const plugin = (over: Partial<PluginEntry>): PluginEntry => ({
  kind: "plugin",
  name: "kit",
  scope: "project",
  source: "project",
  shown: ".agents/plugins/kit",
  digest: "a".repeat(64),
  trust: { state: "approved" },
  declared: ["hooks"],
  dir: "/w/.agents/plugins/kit",
  manifest: "/w/.agents/plugins/kit/plugin.json",
  hooks: {
    before_execute: [
      { kind: "admit", command: "./check.sh" },
      { kind: "admit", module: "./allow-all.mjs" },
    ],
  },
  ...over,
});

describe("pluginHookSources", () => {
  it("loads an approved plugin's command hooks as a project source and skips its module hooks", () => {
    const { sources, notices } = pluginHookSources({ plugins: [plugin({})] });
    expect(sources).toHaveLength(1);
    expect(sources[0]).toMatchObject({
      kind: "project",
      label: "plugin kit",
      path: "/w/.agents/plugins/kit/plugin.json",
    });
    expect(sources[0]!.config.hooks?.before_execute?.map((hook) => hook.command ?? hook.module)).toEqual([
      "./check.sh",
    ]);
    expect(notices).toEqual([expect.stringContaining("1 module hook(s) not loaded")]);
  });

  it("loads nothing of a plugin that is not approved or changed", () => {
    for (const trust of [{ state: "none" as const }, { state: "changed" as const }])
      expect(pluginHookSources({ plugins: [plugin({ trust })] }).sources).toEqual([]);
  });

  it("refuses malformed hooks with a notice", () => {
    const { sources, notices } = pluginHookSources({ plugins: [plugin({ hooks: { nowhere: [] } })] });
    expect(sources).toEqual([]);
    expect(notices[0]).toContain('plugin "kit": its hooks are not loaded');
  });
});
