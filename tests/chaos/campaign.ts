/**
 * One chaos schedule, from a seed (README "Fault campaign and fuzzing"): a sandbox, a journal written in
 * random byte pieces while random bursts of real hook processes run against it (`actions`), under random
 * server faults (`drawFault`, `faultPlan`) and random kill -9 of hooks, their detached workers and replays.
 */

import { FakeOpenViking, type Fault, FINAL_CODES, SERVER_ERROR_CODES } from "../support/fake-openviking.ts";
import { placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { tempDir } from "../support/temp.ts";
import { audit, snapshotProblems, walk } from "./audit.ts";
import { LiveJournal, MARK } from "./journal-model.ts";
import { Processes, type Run } from "./procs.ts";
import { Rng } from "./rng.ts";

/**
 * The API key of every sandbox: it must never show up in a log. A user key as OpenViking makes them
 * (account.user.secret), so each process's tagged key names the same user and sends the others' queued writes.
 */
const API_KEY = "Y2hhb3M.Y29kZXI.ovk-chaos-apikey-0123456789abcdef";
/** The user's own files in the Kimi home, which nothing may touch. */
const USER_FILES = {
  "config.toml": '# mine\r\ndefault_model = "k3"\r\n[[hooks]]\r\nevent = "Stop"\r\ncommand = "true"\r\n',
  "mcp.json": '{\n\t"mcpServers": {\n\t\t"other": {"command": "x", "args": []}\n\t}\n}',
};
const CWD = "/home/user/proj";
const WORKER = { OPENVIKING_KIMI_HOOK_WORKER: "1" };
const WRITE_ROUTES = [
  "POST /api/v1/sessions/:id/messages/batch",
  "POST /api/v1/sessions/:id/messages",
  "POST /api/v1/sessions/:id/commit",
];

/** Replies of things that are not OpenViking, as users meet them in front of it. */
const NOT_OPENVIKING: NonNullable<Fault["raw"]>[] = [
  { status: 200, headers: { "content-type": "text/html" }, body: "<html><title>Sign in</title></html>" },
  { status: 200, body: "OK" },
  { status: 200 },
  { status: 404, headers: { "content-type": "text/html" }, body: "<h1>404 Not Found</h1>" },
  { status: 404, headers: { "content-type": "application/json" }, body: '{"detail":"Not Found"}' },
  { status: 307, headers: { location: "/v2/" } },
  { status: 301, headers: { location: "https://127.0.0.1:1/" } },
  { status: 502, headers: { "content-type": "text/html" }, body: "<html>Bad Gateway</html>" },
];

/** OpenViking's own error envelopes that are not final: every such code of the server's, and one with no code. */
const NOT_FINAL: NonNullable<Fault["raw"]>[] = [
  ...Object.entries(SERVER_ERROR_CODES).filter(([code]) => !FINAL_CODES.includes(code)),
  ["NOT_FOUND", 404] as const, // a final code, but naming no resource: a missing route
].map(([code, status]) => ({
  status,
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ status: "error", error: { code, message: `${code} from the chaos server` } }),
})).concat([{ status: 200, headers: { "content-type": "application/json" }, body: '{"status":"error"}' }]);

/** How many kinds of server fault a schedule draws from (`drawFault`). */
export const FAULT_KINDS = 11;

/** A server fault of `kind` (0 … FAULT_KINDS - 1), its details drawn from `rng`. */
function drawFault(rng: Rng, kind: number): Fault {
  const times = rng.int(1, 3);
  switch (kind) {
    case 0: // the server cannot take the write now: a bare status, or its own envelope of a code that is not final
      return rng.chance(0.5)
        ? { route: rng.pick(WRITE_ROUTES), status: rng.pick([500, 502, 503, 429, 408]), times }
        : { route: rng.pick(WRITE_ROUTES), raw: rng.pick(NOT_FINAL), times };
    case 1:
      return { route: "POST /api/v1/sessions/:id/*", status: 503, times: rng.int(1, 5) };
    case 2:
      return { route: "*", status: rng.pick([500, 503]), times: rng.int(1, 6) };
    case 3:
      return { route: rng.pick(WRITE_ROUTES), drop: true, times };
    case 4:
      return { route: rng.pick(WRITE_ROUTES.slice(0, 2)), lostReply: true, times };
    case 5: // longer than the client's 1 s timeout: the write lands after the client gave up
      return { route: rng.pick(WRITE_ROUTES), delayMs: 1300, times: 1 };
    case 6: // slow but answered: widens every window a kill can hit
      return { route: "*", delayMs: rng.int(100, 700), times: rng.int(1, 4) };
    case 7: // refused for good: a batch (one message at a time then), or messages (kept, later `replay --rejected`)
      return rng.chance(0.5)
        ? { route: WRITE_ROUTES[0], status: 400, times: 1 }
        : { route: "POST /api/v1/sessions/:id/messages*", status: 400, times };
    case 8: // something that is not OpenViking answers: a proxy's page, a redirect, an empty or foreign reply
      return { route: rng.pick(["*", ...WRITE_ROUTES]), raw: rng.pick(NOT_OPENVIKING), times: rng.int(1, 5) };
    case 9: // the key expires, then is accepted again (the fault runs out)
      return {
        route: rng.pick(["*", "POST /api/v1/sessions/:id/*"]),
        status: rng.pick([401, 403]),
        error: { code: "UNAUTHENTICATED", message: "Invalid API key" },
        times: rng.int(1, 6),
      };
    default:
      return { route: "POST /api/v1/search/search", status: 500, times };
  }
}

type PlannedFault = { kind: number; fault: Fault };

/**
 * The server faults of each of `stages` stages of the schedule of `seed`, drawn from `rng`: a stage has one
 * or two faults of random kinds with probability 0.6, and one stage (drawn) also has a fault of kind `seed
 * mod FAULT_KINDS` — so any FAULT_KINDS consecutive seeds (a default run's 12 schedules) draw every kind at
 * least once, and a seed still gives the same plan on every run.
 */
function faultPlan(rng: Rng, seed: number, stages: number): PlannedFault[][] {
  const forced = ((seed % FAULT_KINDS) + FAULT_KINDS) % FAULT_KINDS;
  const forcedStage = rng.int(0, stages - 1);
  const planned = (kind: number): PlannedFault => ({ kind, fault: drawFault(rng, kind) });
  return Array.from({ length: stages }, (_, s) => {
    const n = rng.chance(0.6) ? rng.int(1, 2) : 0;
    const drawn = Array.from({ length: n }, () => planned(rng.int(0, FAULT_KINDS - 1)));
    return s === forcedStage ? [planned(forced), ...drawn] : drawn;
  });
}

/** What a schedule did, for the summary: its audit, and what ran. */
export type ScheduleResult = Awaited<ReturnType<typeof runSchedule>>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** When to kill -9 a started process and/or its detached worker (undefined: not at all). */
type KillPlan = { runAfterMs?: number; workerAfterMs?: number };

const drawKill = (rng: Rng, detaches: boolean): KillPlan => ({
  runAfterMs: rng.chance(0.25) ? rng.int(0, 600) : undefined,
  workerAfterMs: detaches && rng.chance(0.4) ? rng.int(0, 1200) : undefined,
});

/** Runs the schedule of `seed` and audits it. */
export async function runSchedule(seed: number) {
  const started = Date.now();
  const rng = new Rng(seed);
  await using dir = await tempDir("ovk-chaos-");
  const home = dir.path;
  const fake = await FakeOpenViking.start({
    apiKey: API_KEY,
    taggedKeys: true,
    noBatch: rng.chance(0.2) ? 404 : undefined,
  });
  fake.context = { ...fake.context, rendered: `${fake.context.rendered}\n${MARK} recalled memory` };
  let faultsHit = 0;
  let applied: { fault: Fault; initial: number }[] = [];
  const countFaults = () => {
    for (const a of applied) faultsHit += a.initial - (a.fault.times ?? 0);
    applied = [];
  };
  const setFault = (f: Fault) => {
    fake.fault(f);
    applied.push({ fault: fake.faults.at(-1)!, initial: f.times ?? 0 });
  };
  try {
    const kimi = `${home}/.kimi-code`;
    await Deno.mkdir(kimi, { recursive: true });
    const userFiles = Object.fromEntries(
      Object.entries(USER_FILES).map(([name, text]) => [`${kimi}/${name}`, text]),
    );
    for (const [path, text] of Object.entries(userFiles)) await Deno.writeTextFile(path, text);
    const sessionId = `session_chaos-${seed}`;
    const path = await placeJournal(home, sessionId, "");
    const journal = LiveJournal.plan(rng, path, rng.int(2, 5));
    const env = sandboxEnv(home, fake.url, {
      OPENVIKING_API_KEY: API_KEY,
      OPENVIKING_ACCOUNT: "chaos",
      OPENVIKING_PROMPT_BUDGET_MS: "2500",
      OPENVIKING_CAPTURE_WAIT_MS: String(rng.pick([0, 300, 1500])),
      OPENVIKING_DEBUG: "1",
      // Odd seeds: the default policy, its Stop workers' idle watch committing after a second idle (and ending).
      OPENVIKING_COMMIT_POLICY: seed % 2 ? "balanced" : "every-turn",
      OPENVIKING_IDLE_COMMIT_SECONDS: "1",
    });
    const procs = new Processes(home, env);
    /** A process that sends session writes itself (so killing it may lose a reply). */
    const writer = (args: string[], stdin = "", extraEnv?: Record<string, string>) =>
      procs.start(args, stdin, { writer: true, extraEnv });
    const payload = (event: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({ hook_event_name: event, session_id: sessionId, cwd: CWD, ...extra });

    /** Kills `run` after its planned delay, and/or its detached worker a planned time after it shows up. */
    const applyKills = async (run: Run, plan: KillPlan): Promise<void> => {
      if (plan.runAfterMs !== undefined) {
        await sleep(plan.runAfterMs);
        procs.killRun(run);
      }
      if (plan.workerAfterMs === undefined) return;
      const end = Date.now() + 3000;
      while (Date.now() < end && !run.killed) {
        const w = (await procs.workers()).find((x) => x.origin === run.origin);
        if (w) {
          await sleep(plan.workerAfterMs);
          procs.killWorker(w);
          return;
        }
        await sleep(20);
      }
    };

    const hook = async (event: string, stdin: string, plan: KillPlan) => {
      const run = await procs.start(["hook", event], stdin);
      await applyKills(run, plan);
      return run;
    };

    /** One hook run of `event` (after `before`), its kill drawn when the action is. */
    const once =
      (event: string, extra: Record<string, unknown> = {}, before?: () => Promise<unknown>) => (r: Rng) => {
        const kill = drawKill(r, true);
        const name = event.split("-").map((w) => w[0].toUpperCase() + w.slice(1)).join("");
        return async () => {
          await before?.();
          await hook(event, payload(name, extra), kill);
        };
      };
    const actions: Record<string, (r: Rng) => () => Promise<void>> = {
      prompt: (r) => {
        const kill = drawKill(r, false);
        return async () => {
          const k = journal.nextPrompt();
          if (k === undefined) return;
          const run = await hook(
            "user-prompt-submit",
            payload("UserPromptSubmit", { prompt: journal.promptOf(k) }),
            kill,
          );
          const out = await run.ended;
          if (!run.killed && out.stdout) await journal.setHookResult(k, out.stdout.trimEnd());
        };
      },
      stop: once("stop"),
      "two stops": (r) => {
        const kills = [drawKill(r, true), drawKill(r, true)];
        return async () => void await Promise.all(kills.map((kill) => hook("stop", payload("Stop"), kill)));
      },
      "subagent stop": once("stop", { agent_id: "agent_sub_1" }, () => journal.completeLine()),
      "pre-compact": once("pre-compact", { trigger: "auto" }),
      "session-start": (r) => {
        const source = r.pick(["startup", "resume", "compact"]);
        const rewrite = source === "resume" && r.chance(0.4);
        return once("session-start", { source }, async () => rewrite && await journal.rewrite())(r);
      },
      interrupt: (r) => {
        const cancelAfter = r.int(0, 900);
        const kill = drawKill(r, true); // its detached replay, when it starts one
        return async () => {
          const k = await journal.cancelOpenTurn(1000);
          const run = await writer(["hook", "interrupt"], payload("Interrupt", { turn_id: k ?? 0 }));
          const grow = (async () => {
            await sleep(cancelAfter);
            await journal.completeLine();
            if (k !== undefined) await journal.growTo(journal.written + 400);
          })();
          await Promise.all([applyKills(run, kill), grow]);
        };
      },
      "session-end": (r) => {
        const bytes = r.int(0, 400);
        return once("session-end", { reason: "exit" }, async () => {
          await journal.cancelOpenTurn(1000);
          await journal.growTo(journal.written + bytes);
        })(r);
      },
      worker: (r) => {
        const kill = drawKill(r, false);
        return async () => {
          await applyKills(await writer(["hook", "stop"], payload("Stop"), WORKER), kill);
        };
      },
      replay: (r) => {
        const kill = { runAfterMs: r.chance(0.5) ? r.int(0, 1500) : undefined };
        const rejected = r.chance(0.3);
        return async () => {
          await applyKills(await writer(rejected ? ["replay", "--rejected"] : ["replay"]), kill);
        };
      },
    };
    const actionNames = Object.keys(actions);

    const snapshots = { files: 0, problems: [] as string[] };
    const stages = rng.int(4, 8);
    const plan = faultPlan(rng, seed, stages);
    const total = journal.size();
    for (let s = 0; s < stages; s++) {
      const cut = Math.floor(total * ((s + rng.next()) / stages));
      const faults = plan[s].map((p) => p.fault);
      const burst = Array.from({ length: rng.int(1, 3) }, () => actions[rng.pick(actionNames)](rng));
      const growth = rng.chance(0.5) ? { afterMs: rng.int(0, 800), bytes: rng.int(1, 2000) } : undefined;
      const pause = rng.chance(0.5) ? rng.int(0, 300) : 0;

      await journal.growTo(cut);
      if (faults.length) {
        countFaults();
        fake.clearFaults();
        faults.forEach(setFault);
      }
      const growing = (async () => {
        if (!growth) return;
        await sleep(growth.afterMs);
        await journal.growTo(journal.written + growth.bytes);
      })();
      await Promise.all([...burst.map((run) => run()), growing]);
      const snap = await snapshotProblems(`${home}/.openviking`);
      snapshots.files += snap.files;
      snapshots.problems.push(...snap.problems);
      await Promise.all(procs.runs.map((r) => r.ended));
      await sleep(pause);
    }

    countFaults();
    fake.clearFaults();
    await journal.finish();
    await procs.settle(150_000);
    const pendingDir = `${home}/.openviking/pending`;
    const abandoned = (await walk(`${pendingDir}/kimicode`)).filter((f) => f.path.endsWith(".claim")).length;
    for (let round = 0; round < 3; round++) {
      await (await writer(["replay"])).ended;
      await (await writer(["hook", "stop"], payload("Stop"), { ...WORKER, OPENVIKING_CAPTURE_WAIT_MS: "0" }))
        .ended;
      const left = await (await writer(["replay"])).ended;
      const kept = await (await writer(["replay", "--rejected"])).ended;
      if (left.code === 0 && kept.code === 0) break;
      await sleep(1100); // a write whose reply was lost is asked about once the server had a timeout more
    }
    await procs.settle(30_000);

    const input = { home, sessionId, journalPath: path, fake, procs, abandoned, snapshots, userFiles };
    const result = await audit({ ...input, apiKey: API_KEY });
    return {
      ...result,
      seed,
      hookRuns: procs.runs.length,
      kills: procs.kills.length,
      workerKills: procs.kills.filter((k) => k.label === "detached worker").length,
      faults: faultsHit,
      faultKinds: [...new Set(plan.flat().map((p) => p.kind))],
      stages,
      durationMs: Date.now() - started,
    };
  } finally {
    await fake.close();
  }
}
