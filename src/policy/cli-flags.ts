import type { PermissionLayer, PermissionSettings } from "./permissions.js";

export const CLI_SOURCE = "cli";

/**
 * The CLI layer from the flags as parsed (`--allow RULE`, `--write MODE`, `--read-only`, ...): the
 * user at the keyboard, so it is trusted and has the highest precedence.
 */
export function cliLayer(flags: PermissionSettings): PermissionLayer {
  const layer: PermissionLayer = { source: CLI_SOURCE, trusted: true };
  if (flags.allow !== undefined) layer.allow = flags.allow;
  if (flags.ask !== undefined) layer.ask = flags.ask;
  if (flags.deny !== undefined) layer.deny = flags.deny;
  if (flags.write !== undefined) layer.write = flags.write;
  if (flags.shell !== undefined) layer.shell = flags.shell;
  if (flags.readOnly === true) layer.readOnly = true;
  return layer;
}
