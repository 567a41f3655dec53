import { editDistance } from "./edit-distance.js";

/**
 * "Did you mean": the closest known name to a mistyped one. Edit distance (insert, delete,
 * substitute, swap two neighbours) with a cut-off relative to the length, so a wild guess gets no
 * suggestion rather than a misleading one.
 */
export function closest(typed: string, known: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = editDistance(typed, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best === undefined) return undefined;
  // A prefix of a longer name ("ru" for "run") is a typing shortcut, not a typo: always suggested.
  if (best.startsWith(typed) && typed.length >= 2) return best;
  return bestDistance <= allowedDistance(typed, best) ? best : undefined;
}

/**
 * Every known name close to a mistyped one, closest first (at most `limit`): those within the
 * cut-off `closest` uses, and those containing what was typed ("4o" in "gpt-4o"), case ignored.
 */
export function closeMatches(typed: string, known: Iterable<string>, limit = 3): string[] {
  const lower = typed.toLowerCase();
  return [...known]
    .map((name) => ({ name, distance: editDistance(lower, name.toLowerCase()) }))
    .filter(
      ({ name, distance }) =>
        distance <= allowedDistance(typed, name) || (lower.length >= 2 && name.toLowerCase().includes(lower)),
    )
    .sort((a, b) => a.distance - b.distance || a.name.localeCompare(b.name))
    .slice(0, limit)
    .map(({ name }) => name);
}

/** How many edits still make a typo rather than another name: a third of the longer one. */
function allowedDistance(a: string, b: string): number {
  return Math.max(1, Math.floor(Math.max(a.length, b.length) / 3));
}
