import { digestOf } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";
import type { PermissionDecision, PermissionPort, PermissionRequest } from "./ports.js";

export type WriteMode = "allow" | "ask" | "deny" | "propose";

/**
 * The default permission policy by effect class: reads are allowed (the workspace boundary
 * still applies), local writes follow the write mode, anything that runs processes or reaches
 * outside asks.
 */
export class ModePolicy implements PermissionPort {
  readonly describe: JsonObject;
  readonly digest: string;

  constructor(
    private readonly write: WriteMode,
    private readonly readOnly: boolean,
    private readonly shell: "allow" | "ask" | "deny" = "ask",
  ) {
    this.describe = { write: readOnly ? "deny" : write, read_only: readOnly, shell };
    this.digest = digestOf(this.describe);
  }

  decide(request: PermissionRequest): PermissionDecision {
    switch (request.effect) {
      case "pure":
      case "read_only":
        return { decision: "allow", source: "default", reason: "reading inside the workspace is allowed" };
      case "local_write": {
        if (this.readOnly)
          return { decision: "deny", source: "cli", reason: "the run is read-only (--read-only)" };
        return { decision: this.write, source: "cli", reason: `writes are "${this.write}" (--write)` };
      }
      case "process_execution":
        return { decision: this.shell, source: "cli", reason: `commands are "${this.shell}" (--shell)` };
      default:
        return { decision: "ask", source: "default", reason: `${request.effect} effects need approval` };
    }
  }
}
