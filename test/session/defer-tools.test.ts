import { describe, expect, it } from "vitest";
import type { LoadedConfig } from "../../src/config/load.js";
import { parseConfigValue } from "../../src/config/schema.js";
import { parseMcpServers } from "../../src/mcp/config.js";
import { parseSessionConfig } from "../../src/session/config.js";
import { deferSettings } from "../../src/session/defer-tools.js";
import { effectiveFlags } from "../../src/session/run-flags.js";

/** Which tools are always loaded and the defer mode, from flags, config files and MCP server entries. */

function loaded(user: unknown, project?: unknown, projectTrusted = false): LoadedConfig {
  return {
    user: {
      kind: "user",
      label: "user config",
      path: "/u/config.json",
      config: parseConfigValue(user, "user config"),
    },
    ...(project !== undefined
      ? {
          project: {
            kind: "project",
            label: "project config",
            path: "/p/.harness/config.json",
            config: parseConfigValue(project, "project config"),
          },
        }
      : {}),
    projectTrusted,
    notices: [],
  };
}

const servers = parseMcpServers(
  {
    github: { command: "gh-mcp", always_load: true },
    jira: { command: "jira-mcp" },
  },
  "user config",
);
const started = Object.entries(servers).map(([name, definition]) => ({ name, definition }));

describe("deferSettings", () => {
  it("always loads the built-ins, always_load names and patterns, and an always_load server's tools", () => {
    const settings = deferSettings(
      {},
      loaded({ tools: { always_load: ["mcp__jira__get_*", "mcp__slack__post"] } }),
      ["read_file", "shell"],
      started,
    );
    expect(settings.mode).toBe("auto");
    for (const name of [
      "read_file",
      "shell",
      "mcp__github__create_issue",
      "mcp__jira__get_ticket",
      "mcp__slack__post",
    ])
      expect(settings.alwaysLoad(name), name).toBe(true);
    for (const name of ["mcp__jira__create_ticket", "mcp__slack__post_more", "mcp__githubx__a", "write_file"])
      expect(settings.alwaysLoad(name), name).toBe(false);
  });

  it("--defer-tools beats the config; a trusted project's defer beats the user's, an untrusted one's does not", () => {
    const user = { tools: { defer: "never" } };
    const project = { tools: { defer: "always" } };
    expect(deferSettings({}, loaded(user), [], []).mode).toBe("never");
    expect(deferSettings({ deferTools: "auto" }, loaded(user), [], []).mode).toBe("auto");
    expect(deferSettings({}, loaded(user, project, true), [], []).mode).toBe("always");
    expect(deferSettings({}, loaded(user, project, false), [], []).mode).toBe("never");
  });

  it("refuses a bad defer value or always_load entry in a config file, and a bad always_load on a server", () => {
    expect(() => parseConfigValue({ tools: { defer: "sometimes" } }, "user config")).toThrow(/defer/);
    expect(() => parseConfigValue({ tools: { always_load: ["a b"] } }, "user config")).toThrow(/always_load/);
    expect(() => parseConfigValue({ tools: { other: 1 } }, "user config")).toThrow();
    expect(() => parseMcpServers({ s: { command: "x", always_load: "yes" } }, "user config")).toThrow(
      /always_load/,
    );
    // Absent stays absent: a definition's digest (what an approval binds to) does not move.
    expect(servers.jira).not.toHaveProperty("always_load");
  });

  it("is a session option (deferTools), recorded for resume", () => {
    expect(parseSessionConfig({ deferTools: "never" }).deferTools).toBe("never");
    expect(() => parseSessionConfig({ deferTools: "sometimes" })).toThrow(/deferTools/);
    expect(effectiveFlags({}, { deferTools: "always" }, false).deferTools).toBe("always");
    expect(effectiveFlags({ deferTools: "never" }, { deferTools: "always" }, false).deferTools).toBe("never");
  });
});
