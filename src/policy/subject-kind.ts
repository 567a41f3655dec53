import { z } from "zod";
import type { SubjectKind } from "../runtime/ports.js";
import type { AnyTool } from "../tools/tool.js";

/**
 * Which argument permission rules match for a tool, read from its input schema rather than
 * from one call's arguments: a grep call without `path` still has the subject ".".
 */
export function subjectKindOf(tool: Pick<AnyTool, "input" | "effect">): SubjectKind {
  const keys = tool.input instanceof z.ZodObject ? Object.keys(tool.input.shape) : [];
  if (keys.includes("command")) return "command";
  if (keys.includes("path")) return "path";
  return "none";
}
