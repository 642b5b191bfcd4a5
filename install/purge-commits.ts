/**
 * What `uninstall --purge` does about the idle commits before it deletes the hook state: each session's owed
 * commit is queued for the server and identity it is owed to; a capture cut off mid-send is named. Install's
 * line when a new key replaces the old.
 */

import type { Context, Plan, Step } from "./transaction.ts";
import { dirName, hookStateDir, joinPath, ledgerDir, pendingDir } from "../lib/paths.ts";
import { readLedger } from "../memory/ledger.ts";
import { sessionDestination } from "../memory/context.ts";
import {
  commitKey,
  committed,
  isFor,
  type SessionState,
  type Uncommitted,
  uncommitted,
  updateState,
} from "../memory/state.ts";
import { waitingSessions } from "../memory/idle-commit.ts";
import { loadConfig } from "../openviking/config.ts";
import {
  countWords,
  type Destination,
  destinationFor,
  destinationOf,
  elsewhereWords,
  goesTo,
  placeWords,
  QUEUE_SUBDIR,
  queueSummary,
  SessionQueue,
} from "../openviking/queue.ts";
import { commandName } from "../lib/self.ts";
import { wrap } from "../lib/columns.ts";

/**
 * Install's line when `newKey` replaces `oldKey` for the same server (`to`): what waits under the old key —
 * captures only a run with it commits (the idle commits take their own key's), and queued writes, which go
 * only with it or a key naming the same user — and the replay that sends them.
 */
export async function keyChangeNote(
  env: Context["env"],
  to: { baseUrl: string; account: string; user: string },
  oldKey: string,
  newKey: string,
): Promise<string | undefined> {
  const old = await sessionDestination({ ...to, apiKey: oldKey });
  const waiting = (await waitingSessions(hookStateDir(env), { ms: 0, destination: old })).map((w) =>
    uncommitted(w.state).filter((u) => u.destination === old).reduce((n, u) => n + u.captured, 0)
  );
  const [was, now] = [
    await destinationFor({ ...to, apiKey: oldKey }),
    await destinationFor({ ...to, apiKey: newKey }),
  ];
  // Queued with the old key (or another of its user's), whatever account and user headers went with it.
  const underOld = (d: Destination) =>
    d.url === was.url && !!d.key && (d.key === was.key || (d.owner !== undefined && d.owner === was.owner));
  const queued = (await queueSummary(pendingDir(env)).catch(() => undefined))?.sessions
    .filter((s) => s.to && underOld(s.to) && !goesTo(s.to, now)) ?? [];
  if (!waiting.length && !queued.length) return undefined;
  const sum = (k: "messages" | "commits") => queued.reduce((n, s) => n + s[k], 0);
  const counted = countWords({ messages: sum("messages"), commits: sum("commits"), sessions: queued.length });
  // The account and user each went with, named in the environment that sends it again.
  const who = new Set(queued.map((s) => placeWords({ ...s.to!, url: "", key: "" })));
  const runs = [...who].map((w) =>
    `\`${w && `${w} `}OPENVIKING_API_KEY=<the previous key> ${commandName(env)} replay\``
  );
  const parts = [
    waiting.length &&
    `${waiting.reduce((a, b) => a + b, 0)} message(s) of ${waiting.length} session(s) wait ` +
      "for a commit that only that key makes",
    queued.length && `${counted} queued go only with that key or one of the same user: to send them, run ` +
      runs.join(", "),
  ].filter(Boolean);
  return `Note: under the previous key for ${was.url}, ${parts.join(", and ")}.`;
}

/** How long a purge waits for the captures still running: a capture worker's budget (60 s), and some. */
const RUNNING_WAIT_MS = 70_000;

/** Where captures `u` of state `file` went: kept with them, else (an older state's) its ledger's last capture's. */
async function whereTo(ctx: Context, file: string, u: Uncommitted): Promise<Destination | undefined> {
  if (u.to) return u.to;
  const sid = file.slice(dirName(file).length + 1, -".json".length);
  const entries = await readLedger(ledgerDir(ctx.env), sid).catch(() => []);
  const origin = entries.flatMap((e) => (e.kind !== "prompt" && e.origin ? [e.origin] : [])).at(-1);
  const [account, user] = origin?.who.split("/") ?? [];
  return origin && destinationOf({ baseUrl: origin.url, account, user });
}

/** Why the purge can neither commit nor queue the commit of what `s` (state `file`) captured, or undefined. */
async function stuckOf(ctx: Context, file: string, s: SessionState, here: string) {
  if (s.inflight?.keys.length) return "cut off mid-send"; // as in memory/idle-commit.ts, never committed over
  for (const u of uncommitted(s)) {
    if (!isFor(u, here) && !await whereTo(ctx, file, u)) return "for a server not recorded";
  }
  return undefined;
}

const wrapped = (lines: string[]) =>
  lines.flatMap((l) => l.startsWith("    ") ? [l] : wrap(l, `${/^ */.exec(l)![0]}  `)).join("\n");

/**
 * The step, first of a last purge's: queues the commit each waiting session owes, for its own destination (the
 * queue is kept; the next replay sends it), once the captures still running have ended; none sent now. None
 * when nothing waits; a refusal (a string) when a session's captures can be neither committed nor queued,
 * unless `drop` (`--yes`): its state would go with them.
 */
export async function purgeCommitStep(
  ctx: Context,
  plan: Plan,
  drop: boolean,
): Promise<Step | string | undefined> {
  const { config } = await loadConfig(ctx.env, ctx.cwd);
  const [here, hereTo] = [await sessionDestination(config), await destinationFor(config)];
  const dir = hookStateDir(ctx.env);
  const waiting = await waitingSessions(dir, { ms: 0 });
  const [cmd, pending] = [commandName(ctx.env), pendingDir(ctx.env)];
  const queueDir = joinPath(pending, QUEUE_SUBDIR);
  const count = (s: SessionState) => uncommitted(s).reduce((n, u) => n + u.captured, 0);
  const stuck = [];
  for (const w of waiting) {
    const why = await stuckOf(ctx, w.file, w.state, here);
    if (why) stuck.push(`  ${w.state.ovSession}: ${count(w.state)} message(s), ${why}`);
  }
  if (stuck.length && !drop) {
    return wrapped([
      `${stuck.length} session(s) hold captures not committed yet:`,
      ...stuck,
      "A Kimi session start settles a capture cut off mid-send and commits it once idle; then run again:",
      `    ${cmd} uninstall --purge`,
      "To drop them instead:",
      `    ${cmd} uninstall --purge --yes`,
      "Nothing was changed.",
    ]);
  }
  const running = await runningSessions(dir);
  if (!waiting.length && !running.length) return undefined;
  const messages = waiting.reduce((n, w) => n + count(w.state), 0);
  return {
    describe: waiting.length
      ? `queue the commit of the ${messages} captured message(s) of ${waiting.length} session(s) waiting for one`
      : `let the captures still running finish first (at most ${RUNNING_WAIT_MS / 1000} s)`,
    run: async () => {
      const missed: string[] = [];
      const queued: (Destination & { what: string })[] = [];
      /** The commit each part of `start` (state `file`) owes, queued for its destination, or named. */
      const settle = async (file: string, start: SessionState) => {
        let s = start;
        const sid = s.ovSession;
        const why = sid && await stuckOf(ctx, file, s, here);
        for (const u of sid && !why ? uncommitted(s) : []) {
          const what = `${sid} (${u.captured} message(s))`;
          const dest = isFor(u, here) ? u.to ?? hereTo : (await whereTo(ctx, file, u))!;
          const queue = await SessionQueue.open(pending, sid!, dest).catch(() => undefined);
          if (!await queue?.commit(commitKey(sid!, u))) missed.push(`${what}: the queue cannot be written`);
          else {
            s = committed(s, u);
            queued.push({ ...dest, what });
          }
        }
        if (why && count(s) && !drop) {
          const again = `run \`${cmd} uninstall --purge\` again`;
          throw new Error(`${sid}: ${count(s)} message(s) not committed, ${why} meanwhile: ${again}`);
        }
        if (why && count(s)) missed.push(`${sid} (${count(s)} message(s)): ${why} (--yes)`);
        return s === start ? undefined : s;
      };
      // Every session's lock, from a capture still running to the purge's end: none writes after it.
      const runs = await runningSessions(dir);
      const files = [...new Set([...waiting.map((w) => w.file), ...runs])].sort();
      if (runs.length) {
        ctx.out.info(`  … waiting for the captures still running (at most ${RUNNING_WAIT_MS / 1000} s)`);
      }
      const deadline = Date.now() + RUNNING_WAIT_MS;
      const held: (() => void)[] = [];
      const release = () => Promise.resolve(held.forEach((r) => r()));
      for (const file of files) {
        const got = await holdState(file, deadline, (s) => settle(file, s)).catch((e: Error) => e);
        if (typeof got === "function") held.push(got);
        else {
          await release();
          const sid = `kc-${file.slice(dir.length + 1, -".json".length)}`;
          throw new Error(
            got instanceof Error
              ? got.message
              : `a capture of ${sid} is still running (its server does not ` +
                `answer): run \`${cmd} uninstall --purge\` again once it has ended`,
          );
        }
      }
      const [away, home] = [
        queued.filter((d) => !goesTo(d, hereTo)),
        queued.filter((d) => goesTo(d, hereTo)),
      ];
      const what = (ds: typeof queued) =>
        `Queued: the commit of ${ds.map((d) => d.what).join(", ")}, in ${queueDir}`;
      if (home.length) {
        plan.notes.push(
          `${what(home)}: install again and the next session start replays it (or run "${cmd} replay").`,
        );
      }
      const elsewhere = elsewhereWords(away.map((d) => ({ ...d, messages: 0, commits: 1 })), cmd);
      if (elsewhere) {
        plan.notes.push(
          wrapped([`${what(away)}; ${elsewhere.summary}: install again, then ${elsewhere.fix}.`]),
        );
      }
      if (missed.length) plan.notes.push(`Not committed: ${missed.join("; ")}.`);
      return { commit: async () => await release(), undo: release };
    },
  };
}

async function runningSessions(dir: string): Promise<string[]> {
  const names = await Array.fromAsync(Deno.readDir(dir), (e) => e.name).catch(() => [] as string[]);
  return names.filter((n) => n.endsWith(".json.lock") && !n.endsWith(".prompt.json.lock"))
    .map((n) => joinPath(dir, n.slice(0, -".lock".length)));
}

/**
 * Runs `fn` on state `file` under its lock (waited for until `deadline`), saves what it returns, and keeps the
 * lock until the function it resolves to is called; undefined when the lock was not had in time.
 */
function holdState(
  file: string,
  deadline: number,
  fn: (s: SessionState) => Promise<SessionState | undefined>,
): Promise<(() => void) | undefined> {
  return new Promise((resolve, reject) => {
    let release = () => {};
    const kept = new Promise<void>((r) => release = r);
    updateState({ file, lock: `${file}.lock` }, async (s, save) => {
      const state = await fn(s);
      if (state) await save(state);
      resolve(release);
      await kept;
      return { value: undefined };
    }, { waitMs: Math.max(0, deadline - Date.now()), durable: true, makeDir: false })
      .then((r) => r.acquired || resolve(undefined), reject);
  });
}
