import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";

/**
 * What an entry of the package gives its callers: the names that exist at run time (what
 * `import()` of the module yields) and the names that exist for the type checker only. Both are
 * the package's contract: removing or renaming one breaks a caller's import.
 */
export interface EntrySurface {
  values: string[];
  types: string[];
}

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The package's entries beside `"./client"` (which has its own versioned check), by export path. */
export const ENTRIES = { ".": "src/index.ts", "./engine": "src/engine-entry.ts" } as const;

export type EntryName = keyof typeof ENTRIES;

/** Every entry's surface, from the sources (one type-checker program for all of them). */
export async function packageSurface(): Promise<Record<EntryName, EntrySurface>> {
  const files = Object.values(ENTRIES).map((file) => join(ROOT, file));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: ["node"],
  });
  const checker = program.getTypeChecker();
  const out = {} as Record<EntryName, EntrySurface>;
  for (const [entry, file] of Object.entries(ENTRIES) as [EntryName, string][]) {
    const module: Record<string, unknown> = await import(pathToFileURL(join(ROOT, file)).href);
    const values = Object.keys(module).sort();
    const source = program.getSourceFile(join(ROOT, file));
    const symbol = source === undefined ? undefined : checker.getSymbolAtLocation(source);
    if (symbol === undefined) throw new Error(`${file} is not a module the checker can read`);
    const named = checker.getExportsOfModule(symbol).map((s) => s.getName());
    const runtime = new Set(values);
    out[entry] = { values, types: named.filter((name) => !runtime.has(name)).sort() };
  }
  return out;
}

/** What changed from `before` to `after`, one line per name, removals (the breaking part) first. */
export function surfaceChanges(
  before: Partial<Record<EntryName, EntrySurface>>,
  after: Record<EntryName, EntrySurface>,
): string[] {
  const lines: string[] = [];
  for (const entry of Object.keys(ENTRIES) as EntryName[]) {
    for (const kind of ["values", "types"] as const) {
      const was = new Set(before[entry]?.[kind] ?? []);
      const now = new Set(after[entry][kind]);
      for (const name of was) if (!now.has(name)) lines.push(`removed from "${entry}" ${kind}: ${name}`);
      for (const name of now) if (!was.has(name)) lines.push(`added to "${entry}" ${kind}: ${name}`);
    }
  }
  return lines.sort((a, b) => Number(a.startsWith("added")) - Number(b.startsWith("added")));
}
