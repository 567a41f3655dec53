import type { MockRequest, Script } from "./mock-server.js";
import type { MockReply, MockUsage, Turn } from "./wire.js";

/**
 * The hello.txt task as a scripted model: read the file, fix the typo with an edit bound to
 * what was read, then answer. Each step is derived from the request: step 2 takes the file's
 * version out of the read's tool result and step 3 insists the edit succeeded, so a client
 * that loses or mispairs a result cannot reach a verified end.
 */

export const HELLO_FILE = "hello.txt";
export const HELLO_BEFORE = "helo, harness\n";
export const HELLO_AFTER = "hello, harness\n";
export const HELLO_GOAL = "Fix the typo in hello.txt so that it says: hello, harness";
export const HELLO_ACCEPT = "grep -qx 'hello, harness' hello.txt";
export const HELLO_ANSWER = "Fixed the typo in hello.txt.";

/** The tool vocabulary of the agent under test. */
export interface Toolset {
  readName: string;
  editName: string;
  readArgs(path: string): Record<string, unknown>;
  /** `version` is what the read's result reported, when the toolset has versions. */
  editArgs(path: string, version: string | undefined): Record<string, unknown>;
  /** Whether reads report a version that edits must quote. */
  versioned: boolean;
  /** The version a read result carries, if this toolset reports one. */
  versionIn(result: string): string | undefined;
  /** The edit's arguments as a prefix cut off inside new_text (never valid JSON). */
  truncatedEditArgs(path: string, version: string | undefined): string;
}

const VERSION = /^version: ([0-9a-f]{64})$/m;

export const HARNESS_TOOLS: Toolset = {
  readName: "read_file",
  editName: "edit_file",
  readArgs: (path) => ({ path }),
  editArgs: (path, version) => ({
    path,
    old_text: "helo, harness",
    new_text: "hello, harness",
    ...(version === undefined ? {} : { expected_version: version }),
  }),
  versioned: true,
  versionIn: (result) => VERSION.exec(result)?.[1],
  truncatedEditArgs: (path, version) =>
    `{"path":${JSON.stringify(path)},${version === undefined ? "" : `"expected_version":"${version}",`}"old_text":"helo","new_text":"hel`,
};

/** Default token counts the server reports, one entry per step. */
export const HELLO_USAGE: readonly MockUsage[] = [
  { input: 1200, output: 31, cached: 0, reasoning: 7 },
  { input: 1460, output: 58, cached: 1024, reasoning: 11 },
  { input: 1733, output: 12, cached: 1280, reasoning: 0 },
];

export class ScriptMismatch extends Error {
  override readonly name = "ScriptMismatch";
}

function assistants(request: MockRequest): Extract<Turn, { role: "assistant" }>[] {
  return request.turns.filter(
    (turn): turn is Extract<Turn, { role: "assistant" }> => turn.role === "assistant",
  );
}

/** The single call of the assistant turn `index` and its paired result; throws when absent. */
export function callAndResult(
  request: MockRequest,
  index: number,
  expectedName: string,
): { id: string; result: Extract<Turn, { role: "tool" }> } {
  const turn = assistants(request)[index];
  const call = turn?.calls[0];
  if (call === undefined || turn?.calls.length !== 1)
    throw new ScriptMismatch(`turn ${index} should hold exactly one call`);
  if (call.name !== expectedName)
    throw new ScriptMismatch(`turn ${index} called ${call.name}, not ${expectedName}`);
  const result = request.turns.find(
    (t): t is Extract<Turn, { role: "tool" }> => t.role === "tool" && t.callId === call.id,
  );
  if (result === undefined) throw new ScriptMismatch(`no tool result for call ${call.id}`);
  return { id: call.id, result };
}

export interface HelloScriptOptions {
  tools?: Toolset;
  usage?: readonly MockUsage[];
  /** Call ids to use for the read and the edit (ignored by http-json, which numbers its own). */
  ids?: { read: string; edit: string };
  /** Faults: return a reply to override the normal answer for this request. */
  inject?: (request: MockRequest) => MockReply | undefined;
}

/** The read-edit-answer conversation for any dialect and toolset. */
export function helloScript(options: HelloScriptOptions = {}): Script {
  const tools = options.tools ?? HARNESS_TOOLS;
  const usage = options.usage ?? HELLO_USAGE;
  const ids = options.ids ?? { read: "call_read_1", edit: "call_edit_1" };
  return (request) => {
    const injected = options.inject?.(request);
    if (injected !== undefined) return injected;
    if (!request.turns.some((turn) => turn.role === "user"))
      throw new ScriptMismatch("the request carries no user goal");
    switch (request.step) {
      case 0:
        return {
          kind: "calls",
          calls: [{ id: ids.read, name: tools.readName, args: tools.readArgs(HELLO_FILE) }],
          ...withUsage(usage[0]),
        };
      case 1: {
        const read = callAndResult(request, 0, tools.readName);
        if (read.result.isError) throw new ScriptMismatch("the read failed");
        const version = tools.versionIn(read.result.content);
        if (tools.versioned && version === undefined)
          throw new ScriptMismatch("the read result carries no version");
        return {
          kind: "calls",
          calls: [{ id: ids.edit, name: tools.editName, args: tools.editArgs(HELLO_FILE, version) }],
          ...withUsage(usage[1]),
        };
      }
      case 2: {
        callAndResult(request, 0, tools.readName);
        const edit = callAndResult(request, 1, tools.editName);
        if (edit.result.isError || /^ERROR /.test(edit.result.content))
          throw new ScriptMismatch(`the edit failed: ${edit.result.content.slice(0, 200)}`);
        return { kind: "text", text: HELLO_ANSWER, ...withUsage(usage[2]) };
      }
      default:
        throw new ScriptMismatch(`the script has no step ${request.step}`);
    }
  };
}

function withUsage(usage: MockUsage | undefined): { usage?: MockUsage } {
  return usage === undefined ? {} : { usage };
}

/** The version a harness read result reported in a request, for building faults mid-task. */
export function readVersion(request: MockRequest, tools: Toolset = HARNESS_TOOLS): string | undefined {
  const read = callAndResult(request, 0, tools.readName);
  return tools.versionIn(read.result.content);
}

/** `harness run` of the hello.txt task: the model flags, then workspace, session and the task. */
export function helloRunArgs(
  model: readonly string[],
  workspace: string,
  session: string,
  options: { json?: boolean } = {},
): string[] {
  return [
    "run",
    ...model,
    "-w",
    workspace,
    "--session",
    session,
    "--write",
    "allow",
    "--accept",
    HELLO_ACCEPT,
    ...(options.json === false ? [] : ["--json"]),
    HELLO_GOAL,
  ];
}
