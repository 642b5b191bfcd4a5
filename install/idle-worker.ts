/**
 * What `uninstall --purge` does about the idle commits before it deletes the hook state: the sessions whose
 * captures wait for a commit (`balanced`: due some minutes after the last turn) are committed now, within a
 * bound, or named as not committed; then the home's idle watch (memory/idle-commit.ts, the detached worker an
 * earlier Stop hook started — it holds `idle-watch.lock` in the hook state directory and a shared lock on its
 * program copy) is stopped, so the copy it runs can go.
 */

import type { Context, Plan, Step } from "./transaction.ts";
import { hookStateDir, joinPath, pendingDir } from "../lib/paths.ts";
import { sessionDestination } from "../memory/context.ts";
import { readState, updateState } from "../memory/state.ts";
import { Budget, clientOptions, createClient } from "../openviking/client.ts";
import { loadConfig } from "../openviking/config.ts";
import { hasUnsent, QUEUE_SUBDIR, REJECTED_SUBDIR } from "../openviking/queue.ts";
import { commandName } from "../lib/self.ts";
import { commitSession } from "../openviking/sessions.ts";

/** The time all of a purge's commits get together. */
const COMMIT_BUDGET_MS = 10_000;

/** How long a stopped watch is given to exit (its locks go with it). */
const EXIT_WAIT_MS = 3000;

/** A session whose captures wait for a commit: its state file, OpenViking session, how many messages. */
interface Waiting {
  file: string;
  ovSession: string;
  messages: number;
}

/** The sessions of the hook state directory with captures not yet committed. */
async function waitingCommits(dir: string): Promise<Waiting[]> {
  const names = await Array.fromAsync(Deno.readDir(dir), (e) => e.name).catch(() => [] as string[]);
  const out: Waiting[] = [];
  for (const name of names.filter((n) => n.endsWith(".json") && !n.endsWith(".prompt.json")).sort()) {
    const file = joinPath(dir, name);
    const s = await readState(file);
    if (s.capturedSinceCommit > 0 && s.ovSession) {
      out.push({ file, ovSession: s.ovSession, messages: s.capturedSinceCommit });
    }
  }
  return out;
}

/** The processes holding the idle watch's lock `lock` (Linux: /proc/locks), this one left out. */
export async function idleWatchPids(lock: string): Promise<number[]> {
  const ino = (await Deno.stat(lock).catch(() => undefined))?.ino;
  if (!ino) return [];
  // /proc/locks skips lines that move while other processes lock and unlock as it is read: five reads are
  // joined (under 400 locks churning, one read missed a held lock 18 times in 200, three joined never).
  const tables = [];
  for (let i = 0; i < 5; i++) tables.push(await procLocks());
  const pids = new Set<number>();
  for (const line of tables.join("\n").split("\n")) {
    const m = /^\d+:\s+FLOCK\s+\S+\s+WRITE\s+(\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s/.exec(line);
    if (m && Number(m[2]) === ino && Number(m[1]) !== Deno.pid) pids.add(Number(m[1]));
  }
  return [...pids];
}

/** /proc/locks read whole; "" without it. */
function procLocks(): Promise<string> {
  return Deno.readTextFile("/proc/locks").catch(() => "");
}

/** Whether process `pid` is still running (Linux: /proc; a zombie has let go of its locks). */
const alive = (pid: number) =>
  Deno.readTextFile(`/proc/${pid}/stat`).then((t) => !/^\d+ \(.*\) Z /s.test(t), () => false);

/**
 * The step, first of a last purge's: commits what waits (a commit that cannot be sent is queued, and the
 * queue is kept), notes what was not committed, then stops the idle watch. None when neither is there.
 */
export async function idleCommitStep(ctx: Context, plan: Plan): Promise<Step | undefined> {
  const dir = hookStateDir(ctx.env);
  const waiting = await waitingCommits(dir);
  const lock = joinPath(dir, "idle-watch.lock");
  const pids = await idleWatchPids(lock);
  if (!waiting.length && !pids.length) return undefined;
  const messages = waiting.reduce((n, w) => n + w.messages, 0);
  const parts = [
    ...(waiting.length
      ? [
        `commit the ${messages} captured message(s) of ${waiting.length} session(s) waiting for a commit now`,
      ]
      : []),
    ...(pids.length
      ? [`stop the idle-commit worker (pid ${pids.join(", ")}) that holds the program copy`]
      : []),
  ];
  return {
    describe: parts.join(", then "),
    run: async () => {
      const { config } = await loadConfig(ctx.env, ctx.cwd);
      const client = createClient(clientOptions(config, "", ctx.fetch ? { fetch: ctx.fetch } : {}));
      const here = await sessionDestination(config);
      const budget = new Budget(COMMIT_BUDGET_MS);
      const [done, queued, missed] = [[] as string[], [] as string[], [] as string[]];
      for (const w of waiting) {
        const res = await updateState<string>({ file: w.file, lock: `${w.file}.lock` }, async (s) => {
          if (s.capturedSinceCommit <= 0 || !s.ovSession) return { value: "done" };
          if (s.destination !== undefined && s.destination !== here) return { value: "elsewhere" };
          if (budget.remaining() < 250) return { value: "no time left" };
          const outcome = await commitSession(client, s.ovSession, {
            budget,
            pendingDir: pendingDir(ctx.env),
            key: `${s.ovSession}:${s.lastAckedKey ?? "none"}`,
            queueOnly: await hasUnsent(pendingDir(ctx.env), s.ovSession),
          });
          if (outcome.kind === "failed") return { value: outcome.message };
          return { state: { ...s, capturedSinceCommit: 0 }, value: outcome.kind };
        }, { waitMs: 5000, durable: true }).catch((e) => ({ acquired: true as const, value: String(e) }));
        const value = res.acquired ? res.value : "its state stayed locked by a running hook";
        const what = `${w.ovSession} (${w.messages} message(s))`;
        if (value === "committed" || value === "done") done.push(what);
        else if (value === "queued") queued.push(what);
        else if (value === "elsewhere") missed.push(`${what}: captured for another server or identity`);
        else if (value === "rejected") {
          const kept = joinPath(pendingDir(ctx.env), REJECTED_SUBDIR);
          missed.push(
            `${what}: OpenViking refused the commit (kept in ${kept}: install again and run replay --rejected)`,
          );
        } else missed.push(`${what}: ${value}`);
      }
      if (queued.length) {
        const cmd = commandName(ctx.env);
        plan.notes.push(
          `Queued: the commit of ${queued.join(", ")}, in ${joinPath(pendingDir(ctx.env), QUEUE_SUBDIR)} ` +
            `(the server did not take it now): install again and the next session start replays it (or run "${cmd} replay").`,
        );
      }
      if (missed.length) plan.notes.push(`Not committed: ${missed.join("; ")}.`);
      // Stopped now, while its lock is still where it was (a later step moves the hook state away).
      const stopped: number[] = [];
      for (const pid of await idleWatchPids(lock)) {
        try {
          Deno.kill(pid, "SIGTERM");
          stopped.push(pid);
        } catch {
          // Gone already, or not ours to signal.
        }
      }
      const until = Date.now() + EXIT_WAIT_MS;
      while (Date.now() < until && (await Promise.all(stopped.map(alive))).some(Boolean)) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const said = [
        ...(done.length ? [`committed what waited for a commit: ${done.join(", ")}`] : []),
        ...(stopped.length ? [`idle-commit worker stopped (pid ${stopped.join(", ")})`] : []),
      ];
      return { message: said.length ? said.join("\n  ✓ ") : undefined };
    },
  };
}
