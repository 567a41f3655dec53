import { z } from "zod";
import { canonicalJson, sha256Hex } from "../../shared/hash.js";

/** Reservation quantities: an exact JSON integer 1..10 (no booleans, floats or numeric strings). */
export const QUANTITY_MIN = 1;
export const QUANTITY_MAX = 10;
export const quantitySchema = z.number().int().min(QUANTITY_MIN).max(QUANTITY_MAX);

/** Bounded text that is not all whitespace. */
export function boundedText(max: number) {
  return z
    .string()
    .min(1)
    .max(max)
    .refine((s) => s.trim().length > 0, { message: "must not be blank" });
}

/**
 * What the user allows the system to do: a fixed record. Documents and policies can never
 * widen it (a document saying "empty the stock" does not change allow_write).
 */
export const reservationTaskSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "lower-case letters, digits, '.', '_' or '-'"),
  /** A literal, case-insensitive substring to search for; not a semantic query. */
  query: boundedText(200),
  mode: z.enum(["info", "reserve"]),
  quantity: quantitySchema,
  allow_write: z.boolean(),
  /** Tool calls the run may start; finishing does not count. */
  max_tool_calls: z.number().int().min(1).max(50),
});

export type ReservationTask = z.infer<typeof reservationTaskSchema>;

export class TaskError extends Error {
  override readonly name = "TaskError";
}

/** Parse untrusted input as a task, or throw TaskError naming the first bad field. */
export function parseTask(value: unknown): ReservationTask {
  const parsed = reservationTaskSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.join(".") : "task";
  throw new TaskError(`invalid reservation task: ${where}: ${issue?.message ?? "invalid"}`);
}

/**
 * The only idempotency key a reservation of this task may use: SHA-256 of the canonical JSON of
 * the task identity and the reservation content. A retried or replayed reservation of the same
 * content therefore always carries the same key, and a different content never does.
 */
export function deriveKey(task: Pick<ReservationTask, "id">, itemId: string, quantity: number): string {
  return sha256Hex(canonicalJson({ task: task.id, item_id: itemId, quantity }));
}

/** The goal text a run records: a fixed prefix and the task's canonical JSON. */
export const TASK_GOAL_PREFIX = "reservation task ";

export function taskGoal(task: ReservationTask): string {
  return `${TASK_GOAL_PREFIX}${canonicalJson(task)}`;
}

/** The task back from a goal text, or undefined when the text is not a valid task goal. */
export function taskFromGoal(text: string): ReservationTask | undefined {
  if (!text.startsWith(TASK_GOAL_PREFIX)) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text.slice(TASK_GOAL_PREFIX.length));
  } catch {
    return undefined;
  }
  const parsed = reservationTaskSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
