import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkGlobPattern,
  isReservedParts,
  isValidComponent,
  lexicalParts,
  normalizeRelativePath,
  relativeParts,
} from "../../src/workspace/boundary.js";
import { WorkspaceError } from "../../src/workspace/fs.js";
import { ACCEPTED_PATHS, REJECTED_PATHS } from "./boundary-cases.js";

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    if (error instanceof WorkspaceError) return error.code;
    throw error;
  }
}

describe("component rules", () => {
  it("refuse exactly the device names and long names the plain rule does, whatever the shortcuts", () => {
    // The rule spelled out without shortcuts: the stem before the first dot, trailing spaces
    // trimmed, is no device name, and the UTF-8 length is at most 255 bytes.
    const device = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)$/i;
    const plainOk = (name: string) =>
      !device.test((name.split(".")[0] ?? "").replace(/ +$/, "")) && Buffer.byteLength(name, "utf8") <= 255;
    const piece = fc.constantFrom(
      "con",
      "CONOUT$",
      "lpt¹",
      "aux",
      "nul",
      "com9",
      "a",
      "é",
      "😀",
      " ",
      ".",
      "x".repeat(80),
    );
    const name = fc
      .array(piece, { minLength: 1, maxLength: 8 })
      .map((parts) => parts.join(""))
      .filter((n) => !n.endsWith(".") && !n.endsWith(" ") && n !== "." && n !== "..");
    fc.assert(
      fc.property(name, (n) => {
        expect(isValidComponent(n)).toBe(plainOk(n));
      }),
      { numRuns: 3000 },
    );
    for (const n of ["con  .txt", "AUX   ", "conout$.x", "x".repeat(85), "é".repeat(128), "😀".repeat(64)]) {
      expect(isValidComponent(n)).toBe(plainOk(n) && !n.endsWith(" "));
    }
  });
});

describe("relativeParts", () => {
  it.each(REJECTED_PATHS)("refuses %j with %s", (input, code) => {
    expect(codeOf(() => relativeParts(input))).toBe(code);
  });

  it.each(ACCEPTED_PATHS)("normalizes %j to %j", (input, normalized) => {
    expect(normalizeRelativePath(input)).toBe(normalized);
  });

  it("returns components, [] for the root", () => {
    expect(relativeParts("./a//b/")).toEqual(["a", "b"]);
    expect(relativeParts(".")).toEqual([]);
  });

  it("classifies '..' as an escape wherever it is, even next to other faults", () => {
    expect(codeOf(() => relativeParts("CON/../x"))).toBe("PATH_ESCAPE");
    expect(codeOf(() => relativeParts("a\\..\\CON"))).toBe("PATH_ESCAPE");
  });

  it("keeps the offending path in the error and quotes it safely", () => {
    try {
      relativeParts("a\nb");
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(WorkspaceError);
      expect((error as WorkspaceError).path).toBe("a\nb");
      expect((error as WorkspaceError).message).toContain('"a\\nb"');
    }
  });

  it("leaves the reserved rule out of lexicalParts", () => {
    expect(lexicalParts(".harness/x")).toEqual([".harness", "x"]);
    expect(isReservedParts([".Harness", "x"])).toBe(true);
    expect(isReservedParts(["src", ".harness"])).toBe(false);
  });
});

describe("isValidComponent", () => {
  it.each([
    ["a.txt", true],
    [".env", true],
    ["", false],
    [".", false],
    ["..", false],
    ["a/b", false],
    ["CON", false],
    ["x:y", false],
    ["dot.", false],
  ] as const)("%j → %s", (name, valid) => {
    expect(isValidComponent(name)).toBe(valid);
  });
});

describe("checkGlobPattern", () => {
  it.each([
    ["**/*.ts", "**/*.ts"],
    ["./src//*.ts", "src/*.ts"],
    ["src/{a,b}/*.{1..3}", "src/{a,b}/*.{1..3}"],
    ["[[:alpha:]]*", "[[:alpha:]]*"],
  ])("accepts %j as %j", (pattern, normalized) => {
    expect(checkGlobPattern(pattern)).toBe(normalized);
  });

  it.each([
    ["../x", "PATH_ESCAPE"],
    ["a/../../x", "PATH_ESCAPE"],
    ["..\\x", "PATH_ESCAPE"],
    ["/abs/*", "PATH_ESCAPE"],
    ["D:*", "PATH_ESCAPE"],
    ["a\\*", "INVALID_PATH"],
    ["!a", "INVALID_PATH"],
    ["./", "INVALID_PATH"],
    [".harness/*", "RESERVED_PATH"],
    [".HARNESS", "RESERVED_PATH"],
  ] as const)("refuses %j with %s", (pattern, code) => {
    expect(codeOf(() => checkGlobPattern(pattern))).toBe(code);
  });
});
