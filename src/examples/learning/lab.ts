import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative, sep } from "node:path";
import {
  type AnyRecord,
  createSession,
  type EventData,
  type ModelMessage,
  type RunSummary,
  ScriptedProvider,
  type SessionLimits,
} from "../../index.js";
import { TASK_GOAL, TASK_SCOPE, VIRTUAL_REPO } from "./repo.js";

/** What a lesson's scripted model sees at each step. */
export interface ScriptTurn {
  messages: readonly ModelMessage[];
  step: number;
  /** A person changing a file of the repository while the agent works (not the agent). */
  humanEdit(path: string, content: string): Promise<void>;
}

export interface LessonSetup {
  /** Session id, also the scripted model's name. */
  name: string;
  script(turn: ScriptTurn): unknown;
  limits?: SessionLimits;
  /** The model's context window in tokens (the session's `contextWindow`). */
  contextWindow?: number;
}

/** A change the agent proposed, as the journal recorded it (the latest one per file). */
export type RecordedProposal = EventData<"proposal.recorded">;

export interface LessonRun {
  summary: RunSummary;
  records: AnyRecord[];
  proposals: RecordedProposal[];
  /** Every file's bytes before the run, and after it. */
  before: Record<string, Uint8Array>;
  after: Record<string, Uint8Array>;
  /** The repository as the people left it (before the run, plus their edits during it). */
  expected: Record<string, Uint8Array>;
  /** True when the agent changed no byte of the repository. */
  unchangedByAgent: boolean;
}

/** The file tools and no shell: a call to a shell has no tool to reach. */
const TOOLS = "read_file,write_file,edit_file,glob,grep,read_artifact";

/**
 * Run one lesson as a program embedding harness runs a session (`createSession` from the
 * package entry, nothing else) over a throwaway copy of the repository: writes are proposed,
 * never applied; the task scope bounds what may be read and edited; nobody answers a question
 * (every `ask` is denied); and the model is a deterministic script. The directory and its
 * journal are removed afterwards: what the lesson shows is in the run it returns.
 */
export async function runLesson(setup: LessonSetup): Promise<LessonRun> {
  const dir = await mkdtemp(join(tmpdir(), "harness-learning-"));
  try {
    const repo = join(dir, "repo");
    for (const [path, content] of Object.entries(VIRTUAL_REPO)) await writeText(repo, path, content);
    const before = await snapshot(repo);
    let expected = before;
    const humanEdit = async (path: string, content: string) => {
      await writeText(repo, path, content);
      expected = await snapshot(repo);
    };
    const provider = ScriptedProvider.fromFunction(
      (messages, step) => setup.script({ messages, step, humanEdit }),
      setup.name,
    );
    const session = await createSession(
      {
        write: "propose",
        shell: "deny",
        tools: TOOLS,
        readPaths: [...TASK_SCOPE.readPaths],
        editPaths: [...TASK_SCOPE.editPaths],
        ...(setup.limits !== undefined ? { limits: setup.limits } : {}),
        ...(setup.contextWindow !== undefined ? { contextWindow: setup.contextWindow } : {}),
      },
      { workspace: repo, provider, sessionId: setup.name, env: await lessonEnv(join(dir, "home")) },
    );
    let summary: RunSummary;
    let records: AnyRecord[];
    try {
      summary = await session.turn(TASK_GOAL).done;
      records = [...(await session.records())];
    } finally {
      await session.close();
    }
    const after = await snapshot(repo);
    return {
      summary,
      records,
      proposals: latestProposals(records),
      before,
      after,
      expected,
      unchangedByAgent: sameFiles(after, expected),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The environment a lesson's session is set up from: an empty user config of its own, so no
 * person's config file (its rules, hooks, profiles, MCP servers) changes what a lesson shows.
 */
async function lessonEnv(home: string): Promise<NodeJS.ProcessEnv> {
  await mkdir(home, { recursive: true });
  const config = join(home, "config.json");
  await writeFile(config, "{}\n");
  return { ...process.env, HOME: home, HARNESS_CONFIG: config };
}

/** The latest proposal of each file, by path (a later proposal for a file replaces the earlier). */
function latestProposals(records: readonly AnyRecord[]): RecordedProposal[] {
  const latest = new Map<string, RecordedProposal>();
  for (const record of records)
    if (record.type === "proposal.recorded") latest.set(record.data.path, record.data);
  return [...latest.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

async function writeText(root: string, path: string, content: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), content);
}

/** Every file of the repository and its bytes; the session's record (.harness/) is not the repository. */
async function snapshot(root: string): Promise<Record<string, Uint8Array>> {
  const files: Record<string, Uint8Array> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = relative(root, join(entry.parentPath, entry.name)).split(sep).join("/");
    if (path === ".harness" || path.startsWith(".harness/")) continue;
    files[path] = new Uint8Array(await readFile(join(root, path)));
  }
  return files;
}

/** Byte-for-byte equality of two repository snapshots (same paths, same bytes). */
export function sameFiles(a: Record<string, Uint8Array>, b: Record<string, Uint8Array>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => {
    const other = b[key];
    return other !== undefined && Buffer.from(a[key] as Uint8Array).equals(Buffer.from(other));
  });
}
