import type { Page } from "playwright-core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type PageLog, sharedChromium, watch } from "./browser.js";
import { type StubServer, startStubServer } from "./stub-server.js";

const IMG = "<img src=x onerror=\"document.title='pwned-img'\">";
const CLOSE = "</script><script>document.title='pwned-script'</script>";
const HASH = "a".repeat(64);
const now = () => new Date().toISOString();

const browser = sharedChromium();
let server: StubServer;
let page: Page;
let log: PageLog;
/** Requests the page tried to send anywhere but the stub's origin (aborted, and a failure). */
let escaped: string[];

beforeEach(async () => {
  server = await startStubServer();
  const context = await browser().newContext();
  escaped = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(`${server.url}/`)) return route.continue();
    escaped.push(url);
    return route.abort();
  });
  page = await context.newPage();
  log = watch(page);
});
afterEach(async () => {
  await page.context().close();
  await server.close();
});

function startedSession(id: string, goal: string): void {
  server.addSession(id, [
    {
      type: "session.started",
      time: now(),
      data: { goal, provider: { kind: "scripted" }, tools: [{ name: "shell" }, { name: "edit_file" }] },
    },
    { type: "user.input", time: now(), data: { text: goal, turn: 1 } },
    { type: "model.started", time: now(), data: { step: 0, attempt: 0 } },
  ]);
}

function shellReply(id: string, callId: string, command: string): void {
  server.append(id, {
    type: "model.reply",
    time: now(),
    data: {
      step: 0,
      text: "Running it.",
      calls: [{ id: callId, name: "shell", arguments: { command } }],
      stop_reason: "tool_calls",
    },
  });
}

const timelineText = () => page.locator("#timeline").textContent();

describe("the live viewer page against a protocol server", () => {
  it("lists sessions, opens one from the list, and follows it live as records arrive", async () => {
    startedSession("s-one", "tidy the notes");
    startedSession("s-two", "write the changelog");
    await page.goto(`${server.url}/?token=${server.token}`);
    const list = page.locator("#session-list");
    await expect.poll(() => list.textContent()).toContain("write the changelog");
    expect(await list.locator("li").count()).toBe(2);

    await list.getByText("s-two").click();
    await expect.poll(() => page.locator("#summary .goal").textContent()).toBe("write the changelog");
    await expect.poll(timelineText).toContain("Model request · step 1");
    await expect.poll(() => page.locator("#verdict").textContent()).toContain("Journal verified: 3 records");

    server.transient("s-two", "item/delta", { item_id: "model:2", kind: "text", text: "Runn" });
    await expect.poll(() => page.locator("#streaming").textContent()).toBe("Runn");
    shellReply("s-two", "c1", "ls -la");
    await expect.poll(timelineText).toContain("$ ls -la");
    expect(await page.locator("#streaming").textContent()).toBe("");
    expect(await page.locator(".item.call .status").textContent()).toBe("proposed");
    server.append("s-two", {
      type: "tool.started",
      time: now(),
      data: { call_id: "c1", name: "shell", arguments: { command: "ls -la" }, effect: "shell" },
    });
    await expect.poll(() => page.locator(".item.call .status").textContent()).toBe("running");
    server.append("s-two", {
      type: "tool.result",
      time: now(),
      data: {
        call_id: "c1",
        name: "shell",
        status: "ok",
        summary: "exit 0",
        content: "notes.txt\n",
        duration_ms: 1500,
      },
    });
    await expect.poll(() => page.locator(".item.call .status").textContent()).toBe("ok");
    expect(await timelineText()).toContain("1.50 s");
    server.append("s-two", {
      type: "run.finished",
      time: now(),
      data: { status: "verified", answer: "Done." },
    });
    await expect.poll(timelineText).toContain("Outcome: verified");
    await expect.poll(() => page.locator("#session-status").textContent()).toBe("verified");

    // The URL names the session (so it can be reopened), and every request went to the server with the token.
    expect(new URL(page.url()).searchParams.get("session")).toBe("s-two");
    const rpcs = server.received.map((r) => r.method);
    expect(rpcs).toContain("session/list");
    expect(rpcs).toContain("session/verify");
    expect(new Set(server.received.map((r) => r.authorization))).toEqual(new Set([`Bearer ${server.token}`]));
    expect(server.hits).toContain(`GET /events?session=s-two&token=${server.token}`);
    expect(escaped).toEqual([]);
    expect(log.requests.every((url) => url.startsWith(`${server.url}/`))).toBe(true);
    expect(log.pageErrors).toEqual([]);
    expect(log.consoleErrors).toEqual([]);
  }, 60_000);

  it("shows a pending approval with its command, and a click answers it over POST /rpc approval/respond", async () => {
    startedSession("s-ask", "clean up");
    shellReply("s-ask", "c9", "rm -rf build");
    const requested = server.append("s-ask", {
      type: "approval.requested",
      time: now(),
      data: { call_id: "c9", name: "shell", call_hash: HASH, effect: "shell" },
    });
    await page.goto(`${server.url}/?token=${server.token}&session=s-ask`);
    const approvals = page.locator("#approvals");
    await approvals.locator("button").first().waitFor();
    expect(await approvals.textContent()).toContain("$ rm -rf build");
    expect(await page.locator(".item.call .status").textContent()).toBe("awaiting approval");

    await approvals.getByRole("button", { name: "Accept for session" }).click();
    await expect.poll(() => approvals.isHidden()).toBe(true);
    const answer = server.received.find((r) => r.method === "approval/respond");
    expect(answer?.params).toEqual({ approval_id: `s-ask:${requested.seq}`, decision: "accept_session" });
    expect(answer?.authorization).toBe(`Bearer ${server.token}`);
    await expect.poll(timelineText).toContain("Approval granted for the session by identity:default");
    expect(await page.locator(".item.call .status").textContent()).toBe("approved");
  }, 60_000);

  it("declines from the page; an approval already answered when the page opens shows no buttons", async () => {
    startedSession("s-no", "deploy");
    shellReply("s-no", "c1", "deploy --prod");
    server.append("s-no", {
      type: "approval.requested",
      time: now(),
      data: { call_id: "c1", name: "shell", call_hash: HASH, effect: "shell" },
    });
    await page.goto(`${server.url}/?token=${server.token}&session=s-no`);
    await page.locator("#approvals").getByRole("button", { name: "Decline" }).click();
    await expect.poll(timelineText).toContain("Approval declined by identity:default");
    expect(server.received.find((r) => r.method === "approval/respond")?.params.decision).toBe("decline");

    await page.reload();
    await expect.poll(timelineText).toContain("Approval declined");
    expect(await page.locator("#approvals").isHidden()).toBe(true);
    expect(await page.locator("#approvals button").count()).toBe(0);
  }, 60_000);

  it("after the stream drops, the browser reconnects with Last-Event-ID and the page shows each record once", async () => {
    startedSession("s-drop", "keep going");
    await page.goto(`${server.url}/?token=${server.token}&session=s-drop`);
    await expect.poll(timelineText).toContain("Model request · step 1");
    expect(await page.locator("#timeline li").count()).toBe(2);
    server.drop("s-drop");
    shellReply("s-drop", "c1", "make check");
    await expect.poll(timelineText).toContain("$ make check");
    expect(server.lastEventIds).toEqual([undefined, "s-drop:2"]);
    // Replayed in full once more (a server that ignores Last-Event-ID): nothing is shown twice.
    server.ignoreLastEventId = true;
    server.drop("s-drop");
    await expect.poll(() => server.lastEventIds.length).toBe(3);
    server.append("s-drop", {
      type: "run.finished",
      time: now(),
      data: { status: "unverified", answer: "ok" },
    });
    await expect.poll(timelineText).toContain("Outcome: unverified");
    expect(await page.locator("#timeline li").count()).toBe(4);
    expect(await page.locator("#timeline li.call").count()).toBe(1);
  }, 60_000);

  it("renders a hostile goal and tool output as text: no element is created from them and no script runs", async () => {
    startedSession("s-xss", `fix ${IMG} ${CLOSE}`);
    shellReply("s-xss", "c1", `cat ${IMG}`);
    server.append("s-xss", {
      type: "tool.result",
      time: now(),
      data: {
        call_id: "c1",
        name: "shell",
        status: "ok",
        summary: IMG,
        content: `${CLOSE}\n${IMG}`,
        duration_ms: 3,
      },
    });
    await page.goto(`${server.url}/?token=${server.token}&session=s-xss`);
    await expect.poll(timelineText).toContain(CLOSE);
    expect(await page.locator("#summary .goal").textContent()).toBe(`fix ${IMG} ${CLOSE}`);
    expect(await page.locator("#session-list").textContent()).toContain(`fix ${IMG}`);
    expect(await timelineText()).toContain(`$ cat ${IMG}`);
    expect(await page.locator("img").count()).toBe(0);
    expect(await page.locator("script").count()).toBe(1);
    expect(await page.title()).toBe("harness session viewer");
    expect(log.pageErrors).toEqual([]);
    expect(escaped).toEqual([]);
  }, 60_000);

  it("nests a sub-agent's live agent/record notifications in its agent call, grandchildren below, never in the parent's timeline", async () => {
    startedSession("s-ag", "delegate");
    server.append("s-ag", {
      type: "model.reply",
      time: now(),
      data: {
        step: 0,
        text: "",
        calls: [{ id: "a1", name: "agent", arguments: { task: "write it", label: "worker" } }],
        stop_reason: "tool_calls",
      },
    });
    await page.goto(`${server.url}/?token=${server.token}&session=s-ag`);
    await expect.poll(timelineText).toContain("Model request · step 1");
    // The child's seqs are its own journal's: several above the parent's, which must not be skipped for them.
    let childSeq = 0;
    const child = (agent: string, type: string, data: Record<string, unknown>) =>
      server.transient("s-ag", "agent/record", {
        agent,
        record: { seq: childSeq++, type, time: now(), data, prev: HASH, hash: HASH },
      });
    // A child record that arrives before the parent's agent.started waits for its box.
    child("worker", "user.input", { text: "write it", turn: 1 });
    server.append("s-ag", {
      type: "agent.started",
      time: now(),
      data: {
        call_id: "a1",
        label: "worker",
        child_session: "s-ag/worker",
        depth: 1,
        grant: {},
        budget: { model_requests: 4, tool_calls: 8 },
      },
    });
    const worker = page.locator('#timeline > li section.agent[data-child-session="s-ag/worker"]');
    await expect.poll(() => worker.textContent()).toContain("write it");
    child("worker", "model.reply", {
      step: 0,
      text: "",
      calls: [
        { id: "w1", name: "write_file", arguments: { path: "a.txt", content: "a\n" } },
        { id: "g1", name: "agent", arguments: { task: "deeper", label: "sub" } },
      ],
    });
    child("worker", "tool.started", { call_id: "w1", name: "write_file", arguments: { path: "a.txt" } });
    child("worker", "tool.result", {
      call_id: "w1",
      name: "write_file",
      status: "ok",
      summary: `wrote a.txt ${IMG}`,
      content: "",
      duration_ms: 2,
    });
    child("worker", "agent.started", {
      call_id: "g1",
      label: "sub",
      child_session: "s-ag/worker/sub",
      depth: 2,
      grant: {},
      budget: { model_requests: 1, tool_calls: 1 },
    });
    const sub = worker.locator('section.agent[data-child-session="s-ag/worker/sub"]');
    await expect.poll(() => sub.count()).toBe(1);
    const subSeq = childSeq;
    childSeq = 0;
    child("worker/sub", "run.finished", { status: "unverified", answer: "sub done" });
    childSeq = subSeq;
    child("worker", "run.finished", { status: "unverified", answer: "worker done" });
    await expect.poll(() => worker.textContent()).toContain("worker done");
    expect(await sub.textContent()).toContain("sub done");
    const call = worker.locator("li.item.call").first();
    expect(await call.locator(".status").first().textContent()).toBe("ok");
    expect(await call.textContent()).toContain(`wrote a.txt ${IMG}`);
    // The parent's own records after the child's go on being shown (their seqs are below the child's).
    server.append("s-ag", {
      type: "run.finished",
      time: now(),
      data: { status: "verified", answer: "parent done" },
    });
    await expect.poll(timelineText).toContain("parent done");
    // The children's records are inside the agent call only: the parent's own list is its own records.
    expect(await page.locator("#timeline > li").count()).toBe(4);
    expect(await page.locator('#totals [data-total="calls"] .value').textContent()).toBe("1");
    expect(await page.locator("img").count()).toBe(0);
    expect(log.pageErrors).toEqual([]);
  }, 60_000);

  it("says so when the server refuses the token", async () => {
    startedSession("s-1", "anything");
    await page.goto(`${server.url}/?token=${server.token}`);
    await page.locator("#session-list li").first().waitFor();
    // Same page, wrong token for the API: the list call fails and the page says why.
    await page.evaluate("history.replaceState(null, '', '/?token=wrong')");
    await page.route("**/?token=wrong", (route) =>
      route.continue({ url: `${server.url}/?token=${server.token}` }),
    );
    await page.reload();
    await expect
      .poll(() => page.locator("#error").textContent())
      .toContain("session/list: unauthorized (-32001)");
  }, 60_000);
});
