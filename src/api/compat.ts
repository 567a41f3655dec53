/**
 * Backward compatibility of the protocol: given the JSON Schema document of an earlier version and
 * the current one, the changes that would break a client written against the earlier one.
 *
 * Direction matters. Params flow from client to server ("in"): the new schema must accept every
 * message the old one did, so a param may not disappear, become required or be added as required,
 * lose an enum value or change type (widening is fine). Results and notifications flow from server
 * to client ("out"): the new schema must promise everything the old one did, so a property may not
 * disappear or become optional, an enum value may not be removed and a type may not change (new
 * optional or required fields are fine: clients ignore what they do not know).
 */

export type BreakingKind =
  | "method_removed"
  | "notification_removed"
  | "property_removed"
  | "required_added"
  | "became_required"
  | "became_optional"
  | "enum_value_removed"
  | "variant_removed"
  | "type_changed";

export interface BreakingChange {
  kind: BreakingKind;
  /** Where, e.g. `methods.session/read.params.from_seq`. */
  where: string;
  detail: string;
}

type Direction = "in" | "out";
type Schema = { [key: string]: unknown };

function isObject(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function section(doc: unknown, key: string): Schema {
  if (!isObject(doc) || !isObject(doc[key]))
    throw new TypeError(`not a protocol schema: "${key}" is missing`);
  return doc[key] as Schema;
}

export function breakingChanges(oldDoc: unknown, newDoc: unknown): BreakingChange[] {
  const changes: BreakingChange[] = [];
  const oldMethods = section(oldDoc, "methods");
  const newMethods = section(newDoc, "methods");
  for (const [name, oldMethod] of Object.entries(oldMethods)) {
    const newMethod = newMethods[name];
    const where = `methods.${name}`;
    if (!isObject(newMethod)) {
      changes.push({ kind: "method_removed", where, detail: `method ${name} was removed` });
      continue;
    }
    if (!isObject(oldMethod)) continue;
    compare(oldMethod.params, newMethod.params, `${where}.params`, "in", changes);
    compare(oldMethod.result, newMethod.result, `${where}.result`, "out", changes);
  }
  const oldNotes = section(oldDoc, "notifications");
  const newNotes = section(newDoc, "notifications");
  for (const [name, oldNote] of Object.entries(oldNotes)) {
    const where = `notifications.${name}`;
    if (!(name in newNotes)) {
      changes.push({ kind: "notification_removed", where, detail: `notification ${name} was removed` });
      continue;
    }
    compare(oldNote, newNotes[name], where, "out", changes);
  }
  return changes;
}

/** The alternatives of a schema: its anyOf/oneOf branches, or itself. */
function branches(schema: Schema): Schema[] {
  const list = schema.anyOf ?? schema.oneOf;
  return Array.isArray(list) ? list.filter(isObject).flatMap(branches) : [schema];
}

const ANY = "any";

/** The JSON types a schema admits ("any" when it does not say). */
function typesOf(schema: Schema): Set<string> {
  const types = new Set<string>();
  for (const branch of branches(schema)) {
    if (typeof branch.type === "string") types.add(branch.type);
    else if (Array.isArray(branch.type)) for (const t of branch.type) types.add(String(t));
    else if ("const" in branch) types.add(jsonType(branch.const));
    else if (Array.isArray(branch.enum)) for (const v of branch.enum) types.add(jsonType(v));
    else types.add(ANY);
  }
  return types;
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function admits(types: Set<string>, type: string): boolean {
  return types.has(ANY) || types.has(type) || (type === "integer" && types.has("number"));
}

/** The literal values a schema is limited to, or undefined when some branch is not a literal list. */
function literals(schema: Schema): unknown[] | undefined {
  const values: unknown[] = [];
  for (const branch of branches(schema)) {
    if ("const" in branch) values.push(branch.const);
    else if (Array.isArray(branch.enum)) values.push(...branch.enum);
    else if (branch.type !== "null") return undefined;
  }
  return values.length > 0 ? values : undefined;
}

function compare(
  oldValue: unknown,
  newValue: unknown,
  where: string,
  direction: Direction,
  out: BreakingChange[],
) {
  if (!isObject(oldValue) || !isObject(newValue)) return;
  const oldTypes = typesOf(oldValue);
  const newTypes = typesOf(newValue);
  // "in": every type a client could send must still be accepted; "out": nothing new may arrive.
  const [from, to] = direction === "in" ? [oldTypes, newTypes] : [newTypes, oldTypes];
  const lost = [...from].filter((type) => !admits(to, type));
  if (lost.length > 0) {
    out.push({
      kind: "type_changed",
      where,
      detail: `type ${[...oldTypes].sort().join("|")} became ${[...newTypes].sort().join("|")}`,
    });
    return;
  }
  compareLiterals(oldValue, newValue, where, out);
  compareObjects(oldValue, newValue, where, direction, out);
  const oldArrays = branches(oldValue).filter((b) => b.type === "array");
  const newArrays = branches(newValue).filter((b) => b.type === "array");
  if (oldArrays.length === 1 && newArrays.length === 1) {
    compare(oldArrays[0]?.items, newArrays[0]?.items, `${where}[]`, direction, out);
  }
}

function compareLiterals(oldValue: Schema, newValue: Schema, where: string, out: BreakingChange[]) {
  const oldLiterals = literals(oldValue);
  if (oldLiterals === undefined) return;
  const newLiterals = literals(newValue);
  if (newLiterals === undefined) return; // widened to the whole type: every old value still fits
  const kept = new Set(newLiterals.map((v) => JSON.stringify(v)));
  for (const value of oldLiterals) {
    if (!kept.has(JSON.stringify(value))) {
      out.push({ kind: "enum_value_removed", where, detail: `value ${JSON.stringify(value)} was removed` });
    }
  }
}

/** What tells one object variant of a union from another: its properties that are constants. */
function variantKey(schema: Schema): string {
  const props = isObject(schema.properties) ? schema.properties : {};
  const consts = Object.entries(props)
    .filter(([, p]) => isObject(p) && "const" in p)
    .map(([name, p]) => `${name}=${JSON.stringify((p as Schema).const)}`)
    .sort();
  return consts.join(",");
}

function compareObjects(
  oldValue: Schema,
  newValue: Schema,
  where: string,
  direction: Direction,
  out: BreakingChange[],
) {
  const oldObjects = branches(oldValue).filter((b) => b.type === "object");
  const newObjects = branches(newValue).filter((b) => b.type === "object");
  if (oldObjects.length === 0 || newObjects.length === 0) return;
  if (oldObjects.length === 1 && newObjects.length === 1) {
    compareProperties(oldObjects[0] as Schema, newObjects[0] as Schema, where, direction, out);
    return;
  }
  const byKey = new Map(newObjects.map((schema) => [variantKey(schema), schema]));
  for (const oldObject of oldObjects) {
    const key = variantKey(oldObject);
    const match = byKey.get(key);
    if (match === undefined) {
      // A server that stops sending a variant breaks nobody; a server that stops accepting one does.
      if (direction === "in")
        out.push({ kind: "variant_removed", where, detail: `variant ${key || "(unnamed)"} was removed` });
      continue;
    }
    compareProperties(oldObject, match, `${where}<${key}>`, direction, out);
  }
}

function requiredSet(schema: Schema): Set<string> {
  return new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
}

function compareProperties(
  oldObject: Schema,
  newObject: Schema,
  where: string,
  direction: Direction,
  out: BreakingChange[],
) {
  const oldProps = isObject(oldObject.properties) ? oldObject.properties : {};
  const newProps = isObject(newObject.properties) ? newObject.properties : {};
  const oldRequired = requiredSet(oldObject);
  const newRequired = requiredSet(newObject);
  for (const [name, oldProp] of Object.entries(oldProps)) {
    const at = `${where}.${name}`;
    if (!(name in newProps)) {
      out.push({ kind: "property_removed", where: at, detail: `property ${name} was removed` });
      continue;
    }
    if (direction === "in" && !oldRequired.has(name) && newRequired.has(name)) {
      out.push({ kind: "became_required", where: at, detail: `optional property ${name} became required` });
    }
    if (direction === "out" && oldRequired.has(name) && !newRequired.has(name)) {
      out.push({ kind: "became_optional", where: at, detail: `property ${name} may now be missing` });
    }
    compare(oldProp, newProps[name], at, direction, out);
  }
  if (direction === "in") {
    for (const name of Object.keys(newProps)) {
      if (!(name in oldProps) && newRequired.has(name)) {
        out.push({
          kind: "required_added",
          where: `${where}.${name}`,
          detail: `new property ${name} is required`,
        });
      }
    }
  }
  if (isObject(oldObject.additionalProperties) && isObject(newObject.additionalProperties)) {
    compare(oldObject.additionalProperties, newObject.additionalProperties, `${where}.*`, direction, out);
  }
}
