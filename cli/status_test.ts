/**
 * The status screen's text (renderStatus in cli/status.ts, pure): lines of at most 80 columns, wrapped at spaces,
 * and a URI — or any word longer than a line — never broken or cut: it goes whole onto a line of its own.
 */

import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { commitCost, foldSession, renderStatus, type Status } from "./status.ts";
import type { PromptEntry } from "../memory/ledger.ts";
import { WIDTH as STATUS_COLUMNS } from "../lib/columns.ts";

const NOW = Date.parse("2026-12-01T12:00:00.000Z");
const LONG =
  "viking://user/default/memories/preferences/default/the-user-indents-typescript-with-tabs-never-spaces.md";
const MID = "viking://user/default/memories/preferences/default/tabs.md";

const none = { entries: 0, messages: 0, commits: 0 };
const SESSION = "session_4c1e6a2f-2b1d-4f0e-9a55-8b3c2d1e0f9a";

/** A status whose session names `uris` as memories of a commit and in its last error. */
function statusWith(uris: string[]): Status {
  return {
    version: "0.1.0",
    connection: { url: "http://ov", reachable: true, authenticated: true, peer: { id: "p", source: "env" } },
    sessions: [{
      kimiSessionId: SESSION,
      openVikingSessionId: `kc-${SESSION}`,
      lastActivity: NOW - 60_000,
      prompts: { seen: 1, injected: 1, suppressed: 0 },
      captures: { runs: 1, turns: 1, sent: 2, queued: 0, rejected: 0 },
      commits: [{
        at: NOW,
        outcome: "committed",
        taskId: "2e9f038e",
        task: { status: "completed", memories: uris },
      }],
      queue: none,
      rejected: none,
      lastError: {
        at: NOW - 30_000,
        kind: "rejected",
        message: `OpenViking refused the request (HTTP 400): cannot write ${uris.join(" or ")} now`,
        fix: "this message was dropped; if it keeps happening, report it with the server's log",
      },
    }],
    queue: { ...none, sessions: 0, nextReplay: "now", setAside: [] },
    rejected: { ...none, sessions: 0, dir: "", fix: "" },
    notAsked: [],
  };
}

Deno.test("status text: lines wrap at spaces within 80 columns; a URI is never broken or cut", () => {
  const plain = renderStatus(statusWith([MID]), NOW).split("\n");
  for (const line of plain) assertTrue([...line].length <= STATUS_COLUMNS, line);
  assertEquals(plain.filter((l) => l.includes("fix: this message was dropped")).length, 1);
  for (let pad = 0; pad < 30; pad++) {
    const mid = MID.replace("tabs", `tabs${"x".repeat(pad)}`);
    const text = renderStatus(statusWith([LONG, mid]), NOW);
    const lines = text.split("\n");
    for (const uri of [LONG, mid]) {
      assertTrue(lines.some((l) => l.includes(uri)), `${uri} whole on one line:\n${text}`);
    }
    for (const line of lines) {
      const words = line.trim().split(" ");
      assertTrue(
        [...line].length <= STATUS_COLUMNS || words.length === 1 || (words.length === 2 && words[0] === "+"),
        `wider than ${STATUS_COLUMNS} with more than one word: ${line}`,
      );
      assertTrue(!line.endsWith("…"), `cut: ${line}`);
    }
  }
});

Deno.test("status text: what a session's commits cost, with the server's token count or without", () => {
  const status = statusWith([MID]);
  const s = status.sessions[0];
  assertEquals(commitCost(s), "    cost: 1 commit, 2 messages each, model tokens not reported by the server");
  const cost = (x: typeof s) => commitCost(x)?.replace(/^ {4}cost: 1 commit, 2 messages each, /, "");
  for (const running of ["pending", "running"]) {
    const ongoing = statusWith([MID]).sessions[0]; // the server counts them once the extraction ends
    ongoing.commits[0].task!.status = running;
    assertEquals(cost(ongoing), "model tokens counted once its extraction ends");
  }
  const unasked = statusWith([MID]).sessions[0]; // made on another server, or this one unavailable
  delete unasked.commits[0].task;
  assertEquals(cost(unasked), "model tokens unknown (the server was not asked)");
  const made = (taskId: string, tokens: number) => ({
    ...s.commits[0],
    taskId,
    task: { status: "completed", memories: [], tokens },
  });
  s.commits.push(made("b", 8200), made("c", 16400), { at: NOW, outcome: "failed" });
  s.captures.sent = 12;
  assertEquals(
    commitCost(s),
    "    cost: 3 commits, 4 messages each, 16400 model tokens (the server's count)",
  );
  assertTrue(renderStatus(status, NOW).includes("cost: 3 commits"));
  s.uncommitted = { messages: 3, dueAt: NOW + 60_000 }; // captured since the last commit: in none of them
  assertEquals(
    commitCost(s),
    "    cost: 3 commits, 3 messages each, 16400 model tokens (the server's count)",
  );
  s.commits = [];
  assertEquals(commitCost(s), undefined, "nothing committed: no cost line");
});

Deno.test("status text: the cost line wraps between its phrases, never inside one", () => {
  const status = statusWith([MID]);
  const s = status.sessions[0];
  const busy = (taskId: string) => ({ ...s.commits[0], taskId, task: { status: "running", memories: [] } });
  s.commits = Array.from({ length: 12 }, (_, i) => busy(`t${i}`));
  s.captures.sent = 1200;
  const lines = renderStatus(status, NOW).split("\n");
  assertTrue(
    lines.some((l) => l.endsWith("model tokens counted once its extraction ends")),
    lines.join("\n"),
  );
});

Deno.test("status text: a commit with no task says its outcome once", () => {
  const status = statusWith([MID]);
  status.sessions[0].commits = [{ at: NOW, outcome: "failed" }, { at: NOW, outcome: "committed" }];
  const commits = renderStatus(status, NOW).split("\n").filter((l) => l.startsWith("    commit "));
  assertEquals(commits, ["    commit 0 s ago: failed", "    commit 0 s ago: committed"]);
});

Deno.test("status text: how the last prompt's recall went, in words (a failed one never reads 'via none')", () => {
  const said = (lastPath: string) => {
    const status = statusWith([MID]);
    status.sessions[0].prompts.lastPath = lastPath;
    return renderStatus(status, NOW).split("\n").find((l) => l.startsWith("    prompts "));
  };
  const head = "    prompts 1: 1 memory injected";
  assertEquals(said("context"), `${head} (last via context)`);
  assertEquals(said("failed"), `${head} (last recall failed)`);
  assertEquals(said("paused"), `${head} (last recall paused)`);
  assertEquals(said("none"), `${head} (last asked nothing)`);
  assertEquals(said("reused"), `${head} (last reused its recall)`);
  assertEquals(said("skipped"), `${head} (last too short to ask)`);
});

Deno.test("status text: repeats left out are counted when there were some, a zero clause is not printed", () => {
  const status = statusWith([MID]);
  status.sessions[0].prompts.suppressed = 2;
  const line = renderStatus(status, NOW).split("\n").find((l) => l.startsWith("    prompts "));
  assertEquals(line, "    prompts 1: 1 memory injected, 2 left out as repeats");
});

/** A prompt's ledger entry that injected one memory. */
const PROMPT: PromptEntry = {
  ...{ kind: "prompt", at: NOW, ms: 40, path: "context", printedChars: 240, prompt: "how?" },
  injected: [{ uri: MID, score: 0.8, chars: 120 }],
  suppressed: [],
};

Deno.test("status: a prompt whose recall failed folds as a failed recall, not as one that found nothing", () => {
  const here = { url: "http://ov", who: "" };
  const unreachable = { kind: "unreachable" as const, status: 0, message: "connection refused" };
  const last = (e: Partial<PromptEntry>) => foldSession("s", [{ ...PROMPT, ...e }], here).prompts.lastPath;
  assertEquals(last({ path: "none", failure: unreachable, injected: [], suppressed: [] }), "failed");
  assertEquals(last({ path: "none", injected: [], suppressed: [] }), "none", "an empty query asks nothing");
  assertEquals(
    last({ path: "context", failure: unreachable }),
    "context",
    "the profile's failure: recall worked",
  );
});
