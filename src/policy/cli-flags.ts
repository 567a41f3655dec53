import type { ShellMode, WriteMode } from "../rules/modes.js";
import type { PermissionLayer } from "./permissions.js";

export const CLI_SOURCE = "cli";

/** Permission flags as the CLI parsed them (`--allow RULE`, `--write MODE`, `--read-only`, ...). */
export interface CliPermissionFlags {
  allow?: readonly string[];
  ask?: readonly string[];
  deny?: readonly string[];
  write?: WriteMode;
  shell?: ShellMode;
  readOnly?: boolean;
}

/** The CLI layer: the user at the keyboard, so it is trusted and has the highest precedence. */
export function cliLayer(flags: CliPermissionFlags): PermissionLayer {
  const layer: PermissionLayer = { source: CLI_SOURCE, trusted: true };
  if (flags.allow !== undefined) layer.allow = flags.allow;
  if (flags.ask !== undefined) layer.ask = flags.ask;
  if (flags.deny !== undefined) layer.deny = flags.deny;
  if (flags.write !== undefined) layer.write = flags.write;
  if (flags.shell !== undefined) layer.shell = flags.shell;
  if (flags.readOnly === true) layer.readOnly = true;
  return layer;
}
