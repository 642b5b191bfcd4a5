/** Commits of sessions left idle with captures uncommitted: the home's idle watch and a session start's catch-up. */

import { Budget } from "../openviking/client.ts";
import { dirName, joinPath } from "../lib/paths.ts";
import { withLock } from "../lib/lock.ts";
import {
  commitCaptured,
  MIN_COMMIT_MS,
  readState,
  type SessionState,
  uncommitted,
  updateState,
} from "./state.ts";
import { recordRun } from "./ledger.ts";
import { clientFor, type HookContext, otherSession, sessionDestination } from "./context.ts";

/** A watch's pass's budget, its retry of a busy session, its longest life (a later Stop starts another). */
const [PASS_BUDGET_MS, BUSY_RETRY_MS, WATCH_MAX_MS] = [60_000, 1000, 3_600_000];

/** How long a session waits idle, and the destination (`sessionDestination`) of those a run may commit. */
type Idle = { ms: number; destination?: string };

const idleOf = async (ctx: HookContext): Promise<Idle> => ({
  ms: ctx.config.idleCommitSeconds * 1000,
  destination: await sessionDestination(ctx.config),
});

type Waiting = { file: string; dueAt: number; state: SessionState };

/**
 * When `s`'s uncommitted captures for `destination` (undefined: any) are due (pure): `idleMs` after its last
 * capture there, now when that is ahead of the clock.
 */
export function dueAt(
  s: SessionState,
  idleMs: number,
  destination: string | undefined,
  now = Date.now(),
): number | undefined {
  const parts = uncommitted(s).filter((u) => destination === undefined || u.destination === destination);
  if (!parts.length || !s.ovSession) return undefined;
  const last = Math.min(...parts.map((u) => u.at ?? now));
  return last > now ? now : last + idleMs;
}

/** What a state file said, by its inode, size and time: a watch's pass reads only the files that changed. */
const looked = new Map<string, { stamp: string; waiting?: Waiting }>();

/** The sessions of the capture state directory `dir` whose captures wait uncommitted (`idle`'s, by name). */
export async function waitingSessions(dir: string, idle: Idle): Promise<Waiting[]> {
  const names = await Array.fromAsync(Deno.readDir(dir), (e) => e.name).catch(() => [] as string[]);
  const out: Waiting[] = [];
  for (const name of names.filter((n) => n.endsWith(".json") && !n.endsWith(".prompt.json")).sort()) {
    const file = joinPath(dir, name);
    const i = await Deno.lstat(file).catch(() => undefined);
    const stamp = i ? `${idle.ms}:${idle.destination}:${i.ino}:${i.size}:${i.mtime?.getTime()}` : "";
    let seen = looked.get(file);
    if (!stamp || seen?.stamp !== stamp) {
      const s = await readState(file);
      const at = dueAt(s, idle.ms, idle.destination);
      seen = { stamp, waiting: at === undefined ? undefined : { file, dueAt: at, state: s } };
      if (stamp) looked.set(file, seen);
    }
    if (seen.waiting) out.push(seen.waiting);
  }
  return out;
}

type IdleCommit = "done" | "not-due" | "failed" | "busy" | "unsettled";

/** Commits `file`'s session if still due, its lock not waited for; an unsettled intent settled first (decision 7). */
async function commitIfIdle(ctx: HookContext, file: string, idle: Idle, budget: Budget): Promise<IdleCommit> {
  const at = Date.now();
  const { inflight, ovSession, lastCaptureAt, destination } = await readState(file);
  // An intent is its own destination's (captures owed to this one are committed whatever another's does).
  const ours = (s: SessionState) => s.destination === idle.destination;
  const settle = inflight?.keys.length && ovSession && destination === idle.destination;
  let gone = false;
  if (settle) {
    // A Stop's capture that never commits: the commit is this one's, in the ledger.
    const config = { ...ctx.config, commitPolicy: "session-end" as const };
    const other: HookContext = { ...otherSession(ctx, file, ovSession), event: "stop", config };
    const mode = { waitMs: 0, force: false, lockWaitMs: 0, budget };
    const got = await (await import("./capture.ts")).captureSession(other, mode).catch(() => undefined);
    gone = got?.outcome === "no-journal";
  }
  const res = await updateState<IdleCommit>({ file, lock: `${file}.lock` }, async (s) => {
    const due = dueAt(settle ? { ...s, lastCaptureAt } : s, idle.ms, idle.destination); // settling is no turn
    if (due === undefined || due > Date.now() || !s.ovSession) return { value: "not-due" };
    if (s.inflight?.keys.length && ours(s) && !gone) return { value: "unsettled" };
    const options = { budget, pendingDir: ctx.pendingDir };
    const { state, outcome } = await commitCaptured(
      clientFor(ctx),
      s.ovSession,
      s,
      idle.destination!,
      options,
    );
    if (outcome.kind === "failed") return { value: "failed" };
    // In the session's ledger as a capture of no turns that committed: `status` lists the commit.
    const taskId = outcome.kind === "committed" ? outcome.taskId : undefined;
    const run = { outcome: "captured", data: { commit: outcome.kind, taskId } };
    await recordRun(otherSession(ctx, file, s.ovSession), run, at, "idle");
    return { state: ours(s) ? { ...state, inflight: undefined } : state, value: "done" };
  }, { waitMs: 0, durable: true, makeDir: false }).catch(() => ({
    acquired: true as const,
    value: "failed" as const,
  }));
  return res.acquired ? res.value : "busy";
}

/** A session start's catch-up (not under every-turn): commits other sessions idle `idleCommitSeconds`; how many. */
export async function commitLeftSessions(ctx: HookContext, budget: Budget): Promise<number> {
  if (!ctx.capturePaths || ctx.config.commitPolicy === "every-turn") return 0;
  const idle = await idleOf(ctx);
  let done = 0;
  for (const w of await waitingSessions(dirName(ctx.capturePaths.file), idle)) {
    if (w.state.ovSession === ctx.ovSessionId || w.dueAt > Date.now()) continue;
    if (budget.remaining() < MIN_COMMIT_MS) break;
    if (await commitIfIdle(ctx, w.file, idle, budget) === "done") done++;
  }
  return done;
}

/** Sleeps `ms` in steps of a second; false as soon as directory `dir` is gone (a purge: the watch ends). */
async function sleepWhileThere(dir: string, ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until;) {
    await new Promise((r) => setTimeout(r, Math.min(1000, until - Date.now())));
    if (!await Deno.stat(dir).then(() => true, () => false)) return false;
  }
  return true;
}

/** The home's idle watch of this run's destination (ARCHITECTURE decision 13); ends too once a purge ran. */
export async function watchIdleSessions(ctx: HookContext): Promise<void> {
  if (!ctx.capturePaths) return;
  const dir = dirName(ctx.capturePaths.file);
  const idle = await idleOf(ctx);
  const end = Date.now() + WATCH_MAX_MS;
  const failed = new Set<string>();
  const pending = async () => (await waitingSessions(dir, idle)).filter((w) => !failed.has(w.file));
  for (;;) {
    const held = await withLock(joinPath(dir, `idle-watch-${idle.destination}.lock`), async () => {
      for (let waiting = await pending(); waiting.length && Date.now() < end; waiting = await pending()) {
        const next = waiting.reduce((a, b) => a.dueAt <= b.dueAt ? a : b);
        const wait = next.dueAt - Date.now();
        if (wait > 0) {
          if (!await sleepWhileThere(dir, Math.min(wait, idle.ms, end - Date.now()))) return; // purged
          continue; // a later capture (or a clock set back) may have moved it
        }
        const did = await commitIfIdle(ctx, next.file, idle, new Budget(PASS_BUDGET_MS));
        if (did === "failed" || did === "unsettled") failed.add(next.file);
        if (did === "busy") await new Promise((r) => setTimeout(r, BUSY_RETRY_MS));
      }
    }, { waitMs: 0, makeDir: false }).catch(() => ({ acquired: false as const })); // purged: not made again
    // Held by another watch: it has this session. Else a Stop may have just missed this one: look once more.
    if (!held.acquired || Date.now() >= end || !(await pending()).length) return;
  }
}
