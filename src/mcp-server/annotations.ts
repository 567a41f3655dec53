import type { ToolAnnotations } from "@modelcontextprotocol/server";
import type { EffectClass, Idempotency } from "../tools/tool.js";

/**
 * What `harness mcp serve` tells clients about its tools, from the same effect class and
 * idempotency the policy decides by, so a client's own "ask before writing" matches harness's:
 * - readOnlyHint: the tool changes nothing (read_file, glob, grep, read_artifact);
 * - destructiveHint: it may overwrite or delete what is there (a write replaces a file's content,
 *   an edit replaces text, a command can do anything); false only for tools that change nothing;
 * - idempotentHint: the same call twice has no further effect (never claimed for a write, which is
 *   idempotent only with an expected_version, nor a command);
 * - openWorldHint: it reaches beyond the workspace. The file tools never do; a command does when
 *   it runs without a sandbox (the sandbox has no network).
 */
export function annotationsFor(
  effect: EffectClass,
  idempotency: Idempotency,
  options: { commandsSandboxed: boolean },
): ToolAnnotations {
  const readOnly = effect === "pure" || effect === "read_only" || effect === "network_read";
  const openWorld =
    effect === "network_read" ||
    effect === "network_write" ||
    effect === "external_side_effect" ||
    (effect === "process_execution" && !options.commandsSandboxed);
  return {
    readOnlyHint: readOnly,
    destructiveHint: !readOnly,
    idempotentHint: readOnly || idempotency === "pure" || idempotency === "idempotent",
    openWorldHint: openWorld,
  };
}
