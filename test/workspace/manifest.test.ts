import { describe, expect, it } from "vitest";
import { EVENT_SCHEMAS } from "../../src/journal/vocabulary.js";
import { canonicalJson, sha256Hex } from "../../src/shared/hash.js";
import {
  applyChange,
  beforeHashes,
  type ChangeSet,
  checkChange,
  diffManifests,
  type Entry,
  type Manifest,
  ManifestError,
  manifestBytes,
  manifestId,
  manifestJson,
  manifestTotals,
  parseManifest,
  readManifest,
} from "../../src/workspace/manifest.js";

const h = (text: string) => sha256Hex(text);
const file = (text: string, exec = false): Entry => ({ hash: h(text), size: Buffer.byteLength(text), exec });
const tree = (entries: Record<string, Entry>): Manifest => new Map(Object.entries(entries));

describe("manifest JSON", () => {
  it("is canonical: keys sorted, version 2 (with directories) or 1 (without), and its id is the SHA-256 of those bytes", () => {
    const m = tree({
      "b.txt": file("b"),
      "a/x": file("x", true),
      link: { link: "../a/x" },
      a: { dir: true },
    });
    const text = manifestJson(m);
    expect(text).toBe(
      `{"entries":{"a":{"dir":true},"a/x":{"exec":true,"hash":"${h("x")}","size":1},"b.txt":{"exec":false,"hash":"${h("b")}","size":1},` +
        `"link":{"link":"../a/x"}},"version":2}`,
    );
    expect(manifestJson(m, { directories: false })).toBe(
      `{"entries":{"a/x":{"exec":true,"hash":"${h("x")}","size":1},"b.txt":{"exec":false,"hash":"${h("b")}","size":1},` +
        `"link":{"link":"../a/x"}},"version":1}`,
    );
    expect(readManifest(manifestJson(m))).toEqual({ tree: m, directories: true });
    expect(readManifest(manifestJson(m, { directories: false })).directories).toBe(false);
    expect(manifestId(m)).toBe(sha256Hex(manifestBytes(m)));
    expect(
      manifestId(
        tree({ link: { link: "../a/x" }, "b.txt": file("b"), a: { dir: true }, "a/x": file("x", true) }),
      ),
    ).toBe(manifestId(m));
  });

  it("round-trips odd names, a file called __proto__ included", () => {
    const m = tree({
      "line\nbreak": file("1"),
      "-rf": file("2"),
      "ünï/cödé ✓": file("3"),
      "dir/__proto__": { link: "x" },
    });
    (m as Map<string, Entry>).set("__proto__", file("4"));
    const back = parseManifest(manifestBytes(m));
    expect([...back.entries()].sort()).toEqual([...m.entries()].sort());
    expect(back.size).toBe(5);
    expect(back.get("__proto__")).toEqual(file("4"));
    expect(manifestJson(back)).toContain(`"__proto__":{"exec":false`);
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });

  it("is written entry by entry with the same bytes as the generic canonical form, odd names included", () => {
    // The reference: every entry as a plain object, through the generic RFC 8785 walk.
    const reference = (m: Manifest, directories = true): string => {
      const entries: Record<string, Entry> = Object.create(null) as Record<string, Entry>;
      let unread = false;
      for (const [path, entry] of m) {
        if ("dir" in entry && !directories) continue;
        if ("special" in entry || "oversize" in entry) unread = true;
        entries[path] = { ...entry };
      }
      return canonicalJson({ version: unread ? 3 : directories ? 2 : 1, entries });
    };
    const names = [
      "10",
      "2",
      "a",
      "B",
      "a/b",
      "a-b",
      "a b",
      "é",
      "\u{1F600}",
      "z\\udc00x",
      "__proto__",
      '"q"',
      "é/ü",
    ];
    let seed = 7;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 40; round++) {
      const m: Manifest = new Map();
      for (let i = 0; i < 30; i++) {
        const path = `${names[next(names.length)]}/${names[next(names.length)]}${next(3) === 0 ? "" : i}`;
        const kind = next(6);
        const entry: Entry =
          kind === 0
            ? { dir: true }
            : kind === 1
              ? { link: names[next(names.length)] as string }
              : kind === 2 && round % 4 === 0
                ? { special: "fifo" }
                : kind === 3 && round % 4 === 1
                  ? { oversize: true, size: 3_000_000_000, exec: next(2) === 0 }
                  : file(String(i), next(2) === 0);
        (m as Map<string, Entry>).set(path, entry);
      }
      expect(manifestJson(m)).toBe(reference(m));
      expect(Buffer.from(manifestBytes(m)).toString("utf8")).toBe(reference(m));
      if (round % 4 > 1) expect(manifestJson(m, { directories: false })).toBe(reference(m, false));
    }
    expect(manifestJson(new Map())).toBe(reference(new Map()));
    // Large enough to be encoded in several slices, with multi-byte names across the slice ends.
    const large: Manifest = new Map();
    for (let i = 0; i < 3_000; i++)
      (large as Map<string, Entry>).set(`dïr${i % 13}/ファイル-${i}.ts`, file(String(i)));
    const bytes = manifestBytes(large);
    expect(bytes.byteLength).toBeGreaterThan(3 * 64 * 1024);
    expect(Buffer.from(bytes).equals(Buffer.from(reference(large), "utf8"))).toBe(true);
    expect(manifestId(large)).toBe(sha256Hex(reference(large)));
    // A lone surrogate has no canonical form, written either way.
    const lone: Manifest = new Map([["a\ud800", file("x")]]);
    expect(() => manifestJson(lone)).toThrow(/lone surrogate/);
  });

  it("refuses what is not a manifest, saying what is wrong", () => {
    const bad = (text: string) => () => parseManifest(text);
    expect(bad("{")).toThrow(/not JSON/);
    expect(bad('{"version":4,"entries":{}}')).toThrow(ManifestError);
    // Entries the record cannot read exist only in version 3 manifests.
    expect(bad('{"version":2,"entries":{"p":{"special":"fifo"}}}')).toThrow(/"p"/);
    expect(bad('{"version":3,"entries":{"p":{"special":"door"}}}')).toThrow(/"p"/);
    expect(parseManifest('{"version":3,"entries":{"p":{"special":"fifo"}}}').get("p")).toEqual({
      special: "fifo",
    });
    // A version 1 manifest has no directories: one listed is not a manifest harness wrote.
    expect(bad('{"version":1,"entries":{"a":{"dir":true}}}')).toThrow(/is not \{hash,size,exec\}, \{link\}$/);
    expect(parseManifest('{"version":2,"entries":{"a":{"dir":true}}}').get("a")).toEqual({ dir: true });
    expect(bad('{"version":1,"entries":[]}')).toThrow(/version":1/);
    expect(bad('{"version":1,"entries":{"../x":{"link":"y"}}}')).toThrow(/not a relative path/);
    expect(bad('{"version":1,"entries":{"/x":{"link":"y"}}}')).toThrow(/not a relative path/);
    expect(bad('{"version":1,"entries":{"a//b":{"link":"y"}}}')).toThrow(/not a relative path/);
    expect(bad('{"version":1,"entries":{"x":{"hash":"zz","size":1,"exec":false}}}')).toThrow(/"x"/);
    expect(bad('{"version":1,"entries":{"x":{"link":"y","hash":"a"}}}')).toThrow(/"x"/);
    expect(() => parseManifest(new Uint8Array([0xff, 0xfe]))).toThrow(/UTF-8/);
  });
});

describe("diffManifests and applyChange", () => {
  const a = tree({ keep: file("k"), edit: file("old"), gone: file("g"), mode: file("m"), ln: { link: "a" } });
  const b = tree({
    keep: file("k"),
    edit: file("new"),
    mode: file("m", true),
    ln: { link: "b" },
    "new/file": file("n"),
  });

  it("lists created, modified (content, exec bit, link target) and deleted paths, sorted", () => {
    expect(diffManifests(a, b)).toEqual({
      created: [{ path: "new/file", after: file("n") }],
      modified: [
        { path: "edit", before: file("old"), after: file("new") },
        { path: "ln", before: { link: "a" }, after: { link: "b" } },
        { path: "mode", before: file("m"), after: file("m", true) },
      ],
      deleted: [{ path: "gone", before: file("g") }],
    });
    expect(diffManifests(a, a)).toEqual({ created: [], modified: [], deleted: [] });
  });

  it("applying the diff of a to b to a gives b, and the change parses as workspace.changed", () => {
    const change = diffManifests(a, b);
    expect(manifestJson(applyChange(a, change))).toBe(manifestJson(b));
    const record = EVENT_SCHEMAS["workspace.changed"].parse({ call_id: "c1", source: "shell", ...change });
    expect(record.modified).toHaveLength(3);
    expect(beforeHashes(change)).toEqual([h("g"), h("m"), h("old")].sort());
  });

  it("compared at given paths only, it finds what differs there and nothing elsewhere", () => {
    const full = diffManifests(a, b);
    expect(diffManifests(a, b, ["edit", "gone", "new/file", "ln", "mode", "keep", "absent"])).toEqual(full);
    expect(diffManifests(a, b, ["gone"])).toEqual({
      created: [],
      modified: [],
      deleted: [{ path: "gone", before: file("g") }],
    });
  });

  it("a rename is a delete and a create", () => {
    const before = tree({ "old/name": file("x") });
    const after = tree({ "new/name": file("x") });
    expect(diffManifests(before, after)).toEqual({
      created: [{ path: "new/name", after: file("x") }],
      modified: [],
      deleted: [{ path: "old/name", before: file("x") }],
    });
  });

  it("refuses a change that does not chain onto the manifest, unless told not to be strict", () => {
    const change: ChangeSet = {
      created: [{ path: "keep", after: file("z") }],
      modified: [{ path: "edit", before: file("not the current"), after: file("x") }],
      deleted: [{ path: "absent", before: file("q") }],
    };
    expect(checkChange(a, change)).toEqual([
      { path: "keep", reason: "created_exists" },
      { path: "edit", reason: "before_differs" },
      { path: "absent", reason: "missing" },
    ]);
    expect(() => applyChange(a, change)).toThrow(/"keep": created_exists/);
    const loose = applyChange(a, change, { strict: false });
    expect(loose.get("keep")).toEqual(file("z"));
    expect(loose.get("edit")).toEqual(file("x"));
    expect(a.get("edit")).toEqual(file("old"));
  });

  it("totals count regular files and their bytes, not links", () => {
    expect(manifestTotals(b)).toEqual({ files: 4, bytes: 1 + 3 + 1 + 1 });
  });
});

describe("the workspace events", () => {
  it("workspace.base holds the manifest id, totals and the configured excludes", () => {
    const data = { manifest: h("m"), files: 2, bytes: 10, excluded: [".git/", ".harness/"] };
    expect(EVENT_SCHEMAS["workspace.base"].parse(data)).toEqual(data);
    expect(EVENT_SCHEMAS["workspace.base"].safeParse({ ...data, manifest: "x" }).success).toBe(false);
  });

  it("workspace.changed refuses an unknown source and a path that climbs out", () => {
    const schema = EVENT_SCHEMAS["workspace.changed"];
    const empty = { created: [], modified: [], deleted: [] };
    expect(schema.safeParse({ call_id: "outside:12", source: "outside", ...empty }).success).toBe(true);
    expect(schema.safeParse({ call_id: "c", source: "person", ...empty }).success).toBe(false);
    expect(
      schema.safeParse({
        call_id: "c",
        source: "tool",
        ...empty,
        created: [{ path: "../x", after: file("x") }],
      }).success,
    ).toBe(false);
  });
});
