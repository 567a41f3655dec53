import { describe, expect, it } from "vitest";
import { filterEnvironment, looksLikeSecret } from "../../src/sandbox/env.js";

describe("environment filtering", () => {
  it("recognises credential names", () => {
    for (const name of [
      "OPENAI_API_KEY",
      "ANTHROPIC_API_KEY",
      "GITHUB_TOKEN",
      "AWS_SECRET_ACCESS_KEY",
      "AWS_SESSION_TOKEN",
      "DB_PASSWORD",
      "MYSQL_PWD_PASSWORD",
      "GOOGLE_APPLICATION_CREDENTIALS",
      "NPM_AUTH",
      "HARNESS_TEST_API_KEY",
      "lc_secret",
    ]) {
      expect(looksLikeSecret(name), name).toBe(true);
    }
    for (const name of [
      "PATH",
      "HOME",
      "LANG",
      "LC_ALL",
      "TERM",
      "TZ",
      "TMPDIR",
      "USER",
      "SHELL",
      "KEYBOARD",
    ]) {
      expect(looksLikeSecret(name), name).toBe(false);
    }
  });

  it("passes the allow-list, drops everything else, and honours explicit passEnv", () => {
    const env = filterEnvironment(
      {
        PATH: "/usr/bin",
        HOME: "/root",
        LC_CTYPE: "C.UTF-8",
        LC_API_TOKEN: "hidden",
        EDITOR: "vi",
        MY_API_KEY: "hidden",
        CI_DEPLOY_KEY: "explicit",
        UNDEFINED: undefined,
      },
      { allow: ["EDITOR", "MY_API_KEY"], pass: ["CI_DEPLOY_KEY", "NOT_SET"] },
    );
    expect(env).toEqual({
      PATH: "/usr/bin",
      HOME: "/root",
      LC_CTYPE: "C.UTF-8",
      EDITOR: "vi",
      CI_DEPLOY_KEY: "explicit",
    });
  });
});
