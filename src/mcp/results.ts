import { z } from "zod";
import type { ArtifactStore } from "../artifacts/store.js";
import { canonicalJson } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";

/**
 * An MCP `CallToolResult` as the text the model reads. Everything in it is the server's untrusted
 * text: it is parsed (never assumed well-formed), never interpreted, and only quoted. Text parts are
 * joined; images, audio and binary resources are stored whole in the session's artifacts and named
 * by a short placeholder; embedded text resources stay inline under their URI; resource links are
 * listed; structured content is shown as JSON unless a text part already says the same. Content
 * over the preview limit is then cut by the runtime like any tool's (stored whole as an artifact).
 */

/** What a call result became: the model's text and the facts kept in the journal. */
export interface NormalizedResult {
  isError: boolean;
  /** The text the model reads. */
  content: string;
  /** One line for humans and traces. */
  summary: string;
  /** Stored binary parts and content kinds, for the journal (artifact refs are traced by id). */
  data: JsonObject;
}

const text = z.string();
const contentBlock = z.union([
  z.object({ type: z.literal("text"), text }),
  z.object({ type: z.enum(["image", "audio"]), data: text, mimeType: text }),
  z.object({
    type: z.literal("resource"),
    resource: z.union([
      z.object({ uri: text, mimeType: text.optional(), text }),
      z.object({ uri: text, mimeType: text.optional(), blob: text }),
    ]),
  }),
  z.object({
    type: z.literal("resource_link"),
    uri: text,
    name: text,
    title: text.optional(),
    mimeType: text.optional(),
    description: text.optional(),
    size: z.number().optional(),
  }),
]);
type ContentBlock = z.infer<typeof contentBlock>;

const callToolResult = z.object({
  content: z.array(z.unknown()).optional(),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
  isError: z.boolean().optional(),
});

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const SUMMARY_CHARS = 160;

/** A stored binary part as the journal keeps it (`id` = `sha256`, so traces pick it up). */
export interface StoredPart extends JsonObject {
  id: string;
  sha256: string;
  bytes: number;
  mime: string;
  kind: string;
}

/** Normalize a server's result; a result that is not a CallToolResult is a protocol fault (throws). */
export async function normalizeCallResult(raw: unknown, artifacts: ArtifactStore): Promise<NormalizedResult> {
  const parsed = callToolResult.safeParse(raw);
  if (!parsed.success) throw new McpResultError("the server's answer is not a tool result");
  const parts: string[] = [];
  const stored: StoredPart[] = [];
  const kinds: string[] = [];
  const texts: string[] = [];
  for (const item of parsed.data.content ?? []) {
    const block = contentBlock.safeParse(item);
    if (!block.success) {
      const type = typeof item === "object" && item !== null ? (item as { type?: unknown }).type : undefined;
      kinds.push("unsupported");
      parts.push(`[unsupported content${typeof type === "string" ? ` of type ${quote(type)}` : ""} omitted]`);
      continue;
    }
    kinds.push(block.data.type);
    parts.push(await renderBlock(block.data, artifacts, stored, texts));
  }
  const structured = parsed.data.structuredContent;
  if (structured !== undefined && !saidInText(texts, structured)) {
    kinds.push("structured");
    parts.push(`structured content:\n${wellFormed(JSON.stringify(structured, null, 2))}`);
  }
  const content = parts.join("\n");
  const isError = parsed.data.isError === true;
  const data: JsonObject = { content_kinds: kinds };
  if (stored.length > 0) data.artifacts = stored;
  return { isError, content, summary: summarize(content, isError), data };
}

/** The server answered with something that is not a tool result. */
export class McpResultError extends Error {
  override readonly name = "McpResultError";
}

async function renderBlock(
  block: ContentBlock,
  artifacts: ArtifactStore,
  stored: StoredPart[],
  texts: string[],
): Promise<string> {
  switch (block.type) {
    case "text":
      texts.push(block.text);
      return wellFormed(block.text);
    case "image":
    case "audio":
      return storeBinary(block.type, block.data, block.mimeType, undefined, artifacts, stored);
    case "resource": {
      const { resource } = block;
      if ("text" in resource) {
        const mime = resource.mimeType === undefined ? "" : ` (${quote(resource.mimeType)})`;
        return `[resource ${quote(resource.uri)}${mime}]\n${wellFormed(resource.text)}`;
      }
      return storeBinary(
        "resource",
        resource.blob,
        resource.mimeType ?? "application/octet-stream",
        resource.uri,
        artifacts,
        stored,
      );
    }
    case "resource_link": {
      const facts = [
        block.mimeType && quote(block.mimeType),
        block.size !== undefined && `${block.size} bytes`,
      ]
        .filter((fact): fact is string => typeof fact === "string")
        .join(", ");
      const title = block.title ?? block.name;
      const about = block.description === undefined ? "" : `: ${quote(block.description)}`;
      return `[resource link ${quote(block.uri)} ${quote(title)}${facts ? ` (${facts})` : ""}${about}]`;
    }
  }
}

/** Binary content goes to artifacts whole; the model reads where it is, its type and its size. */
async function storeBinary(
  kind: string,
  base64: string,
  mime: string,
  uri: string | undefined,
  artifacts: ArtifactStore,
  stored: StoredPart[],
): Promise<string> {
  const from = uri === undefined ? "" : ` from ${quote(uri)}`;
  const clean = base64.replace(/\s+/g, "");
  if (clean.length % 4 === 1 || !BASE64.test(clean)) {
    return `[${kind}${from} omitted: its data is not valid base64]`;
  }
  const bytes = Buffer.from(clean, "base64");
  const ref = await artifacts.put(bytes);
  stored.push({ id: ref.id, sha256: ref.sha256, bytes: ref.bytes, mime: wellFormed(mime), kind });
  return `[${kind}${from}: ${quote(mime)}, ${ref.bytes} bytes, stored as artifact ${ref.id}]`;
}

/**
 * Whether the text parts already say what the structured content holds, so the model does not
 * read it twice: a text part is its JSON (servers are asked to send both), or every value in it
 * is a string found verbatim in the text (e.g. `{"content": <the file's text>}`).
 */
function saidInText(texts: readonly string[], value: unknown): boolean {
  try {
    if (texts.some((text) => canonicalJson(JSON.parse(text)) === canonicalJson(value))) return true;
  } catch {
    // Not JSON, or too deep to compare: fall through.
  }
  const joined = texts.join("\n");
  const leaves: unknown[] = [];
  const visit = (node: unknown, depth: number): void => {
    if (depth > 32 || leaves.length > 1000) leaves.push(undefined);
    else if (Array.isArray(node)) for (const item of node) visit(item, depth + 1);
    else if (typeof node === "object" && node !== null)
      for (const item of Object.values(node)) visit(item, depth + 1);
    else leaves.push(node);
  };
  visit(value, 0);
  return (
    leaves.length > 0 &&
    leaves.every((leaf) => typeof leaf === "string" && leaf !== "" && joined.includes(leaf))
  );
}

function summarize(content: string, isError: boolean): string {
  const first = content.split("\n", 1)[0] ?? "";
  const line = first.length > SUMMARY_CHARS ? `${first.slice(0, SUMMARY_CHARS)}…` : first;
  return isError ? `the tool reported an error: ${line}` : line || "(no content)";
}

/** A server string shown inside harness's own bracketed notes: JSON-quoted, so it cannot end them. */
function quote(value: string): string {
  return wellFormed(JSON.stringify(value));
}

/** Lone surrogates (possible in JSON from the wire) become U+FFFD so every result can be journaled. */
export function wellFormed(value: string): string {
  return value.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}
