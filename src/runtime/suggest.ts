import { editDistance } from "../shared/edit-distance.js";

/** The closest known name by edit distance, when it is close enough to be a plausible typo. */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best === undefined) return undefined;
  const related = name.includes(best) || best.includes(name) || sharesWord(name, best);
  return bestDistance <= Math.max(2, Math.floor(best.length / 3)) || related ? best : undefined;
}

function sharesWord(a: string, b: string): boolean {
  const words = new Set(
    a
      .toLowerCase()
      .split(/[_\W]+/)
      .filter((w) => w.length > 2),
  );
  return b
    .toLowerCase()
    .split(/[_\W]+/)
    .some((w) => words.has(w));
}
