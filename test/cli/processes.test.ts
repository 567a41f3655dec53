import { describe, expect, it } from "vitest";
import type { LoadedConfig } from "../../src/config/load.js";
import type { ConfigFile } from "../../src/config/schema.js";
import { hookProcessProfile } from "../../src/session/config-hooks.js";
import { sessionProcesses } from "../../src/session/processes.js";
import type { RunFlags } from "../../src/session/run-flags.js";

function loaded(user: ConfigFile = {}, project?: ConfigFile): LoadedConfig {
  const config: LoadedConfig = {
    projectTrusted: false,
    notices: [],
    user: { kind: "user", label: "user config", path: "/home/u/.config/harness/config.json", config: user },
  };
  if (project)
    config.project = {
      kind: "project",
      label: "project config",
      path: "/w/harness.config.json",
      config: project,
    };
  return config;
}

const open = { readOnly: false, propose: false };

function profiles(config: LoadedConfig, flags: RunFlags = {}, modes = open) {
  const processes = sessionProcesses(config, flags, modes, {});
  const hooks = hookProcessProfile(config, {
    workspaceRoot: "/w",
    env: {},
    ...(processes.override ? { sandboxOverride: processes.override } : {}),
  });
  return {
    shell: processes.shell,
    acceptance: processes.acceptance.sandbox.profile,
    hooks: hooks.sandbox.profile,
    refused: processes.shellRefusal !== undefined,
  };
}

describe("the profile of each process a session starts", () => {
  it("defaults: shell and acceptance workspace-write, hooks read-only", () => {
    expect(profiles(loaded())).toEqual({
      shell: "workspace-write",
      acceptance: "workspace-write",
      hooks: "read-only",
      refused: false,
    });
  });

  it("the user config sets acceptance and hook profiles and the variables they get", () => {
    const config = loaded({
      acceptance: { sandbox: "off", pass_env: ["NPM_TOKEN"] },
      hook_commands: { sandbox: "workspace-write" },
    });
    expect(profiles(config)).toMatchObject({ acceptance: "none", hooks: "workspace-write" });
    expect(sessionProcesses(config, {}, open, {}).acceptance.env).toEqual({ pass: ["NPM_TOKEN"] });
  });

  it("a project config's sections are ignored with a notice", () => {
    const config = loaded({}, { acceptance: { sandbox: "off" }, hook_commands: { sandbox: "off" } });
    expect(profiles(config)).toMatchObject({ acceptance: "workspace-write", hooks: "read-only" });
    expect(sessionProcesses(config, {}, open, {}).notices).toEqual([
      expect.stringContaining(`"acceptance" is ignored`),
      expect.stringContaining(`"hook_commands" is ignored`),
    ]);
  });

  it("read-only and propose runs tighten every sandboxed profile to read-only", () => {
    const config = loaded({ hook_commands: { sandbox: "workspace-write" } });
    for (const modes of [
      { readOnly: true, propose: false },
      { readOnly: false, propose: true },
    ]) {
      expect(profiles(config, {}, modes)).toEqual({
        shell: "read-only",
        acceptance: "read-only",
        hooks: "read-only",
        refused: false,
      });
    }
  });

  it("without a sandbox a read-only run refuses the shell; --sandbox off turns the others off", () => {
    expect(profiles(loaded(), { sandbox: "off" }, { readOnly: true, propose: false })).toMatchObject({
      refused: true,
      acceptance: "none",
      hooks: "none",
    });
    expect(profiles(loaded({ sandbox: "off" }), {}, { readOnly: false, propose: true })).toMatchObject({
      refused: true,
    });
  });

  it("--sandbox read-only tightens acceptance and hooks; the user's own off stays off", () => {
    const config = loaded({ acceptance: { sandbox: "off" } });
    expect(profiles(config, { sandbox: "read-only" })).toMatchObject({
      shell: "read-only",
      acceptance: "none",
      hooks: "read-only",
    });
  });
});
