/**
 * Cut `text` at the given offsets, for properties of the form "any split decodes the same".
 * Offsets are taken modulo `text.length + 1` and may come in any order; a repeated offset gives
 * an empty piece, which decoders must also take in their stride.
 */
export function splitAt(text: string, cuts: readonly number[]): string[] {
  const points = cuts.map((cut) => cut % (text.length + 1)).sort((a, b) => a - b);
  const pieces: string[] = [];
  let from = 0;
  for (const point of points) {
    pieces.push(text.slice(from, point));
    from = point;
  }
  pieces.push(text.slice(from));
  return pieces;
}
