import type { ResourceSet } from "../tools/tool.js";

export interface Schedulable {
  /** Position of the call in its reply. */
  index: number;
  resources: ResourceSet;
  concurrencySafe: boolean;
}

/** Two calls conflict when either is exclusive or one writes what the other reads or writes. */
function conflicts(a: ResourceSet, b: ResourceSet): boolean {
  if ("exclusive" in a || "exclusive" in b) return true;
  const touches = (set: { read: string[]; write: string[] }, resource: string) =>
    set.read.some((r) => overlaps(r, resource)) || set.write.some((r) => overlaps(r, resource));
  return a.write.some((r) => touches(b, r)) || b.write.some((r) => touches(a, r));
}

/**
 * Resources are `kind:name` strings. For files the name is a workspace-relative path and a
 * directory covers everything below it (a grep of `src` overlaps a write of `src/a.ts`; `.` is
 * the whole workspace). Other kinds compare exactly.
 */
function overlaps(x: string, y: string): boolean {
  if (x === y) return true;
  if (!x.startsWith("file:") || !y.startsWith("file:")) return false;
  const p = x.slice(5);
  const q = y.slice(5);
  return p === "." || q === "." || q.startsWith(`${p}/`) || p.startsWith(`${q}/`);
}

/**
 * Plan calls (in model order) into batches. A batch holds calls that are concurrency-safe and
 * pairwise non-conflicting; a call that conflicts with anything in the open batch, or is not
 * concurrency-safe, starts a new one. Batches run one after another, so a call never starts
 * before an earlier conflicting call has finished.
 */
export function planBatches<T extends Schedulable>(items: readonly T[]): T[][] {
  const batches: T[][] = [];
  let open: T[] | undefined;
  for (const item of items) {
    const fits =
      open !== undefined &&
      item.concurrencySafe &&
      open.every((other) => other.concurrencySafe && !conflicts(other.resources, item.resources));
    if (fits && open) {
      open.push(item);
    } else {
      open = [item];
      batches.push(open);
    }
  }
  return batches;
}
