/**
 * What `uninstall --purge` does about the idle commits before it deletes the hook state: the sessions whose
 * captures wait for a commit (`balanced`: due some minutes after the last turn) are committed now, within a
 * bound, or queued, or named as not committed. The home's idle watch (memory/idle-commit.ts, the detached
 * worker an earlier Stop started, holding a shared lock on its program copy) ends within a second of the hook
 * state going, so the copy sweep that follows waits for it (install/program.ts).
 */

import type { Context, Plan, Step } from "./transaction.ts";
import { hookStateDir, joinPath, ledgerDir, pendingDir } from "../lib/paths.ts";
import { readLedger } from "../memory/ledger.ts";
import { sessionDestination } from "../memory/context.ts";
import { readState, updateState } from "../memory/state.ts";
import { Budget, clientOptions, createClient } from "../openviking/client.ts";
import { loadConfig } from "../openviking/config.ts";
import { commitSession, hasUnsent, QUEUE_SUBDIR, REJECTED_SUBDIR } from "../openviking/queue.ts";
import { commandName } from "../lib/self.ts";

/** The time all of a purge's commits get together. */
const COMMIT_BUDGET_MS = 10_000;

/**
 * A session whose captures wait for a commit: its state file, OpenViking session, how many messages, and
 * why the purge cannot commit it: captured for another destination, or a capture cut off mid-send (as in
 * memory/idle-commit.ts, never committed over).
 */
interface Waiting {
  file: string;
  ovSession: string;
  messages: number;
  stuck?: string;
}

/** The install command for the server and identity state file `name`'s captures went to (its ledger says). */
async function installFor(ctx: Context, name: string): Promise<string> {
  const entries = await readLedger(ledgerDir(ctx.env), name.replace(/\.json$/, ""));
  const origin = entries.flatMap((e) => (e.kind !== "prompt" && e.origin ? [e.origin] : [])).at(-1);
  const [account, user] = origin?.who.split("/") ?? [];
  const who = `${account ? ` --account ${account}` : ""}${user ? ` --user ${user}` : ""}`;
  return `${commandName(ctx.env)} install --url ${origin?.url ?? "<its URL>"}${who}`;
}

/** The sessions of the hook state directory with captures not yet committed; `here`: this run's destination. */
async function waitingCommits(ctx: Context, dir: string, here: string): Promise<Waiting[]> {
  const names = await Array.fromAsync(Deno.readDir(dir), (e) => e.name).catch(() => [] as string[]);
  const out: Waiting[] = [];
  for (const name of names.filter((n) => n.endsWith(".json") && !n.endsWith(".prompt.json")).sort()) {
    const file = joinPath(dir, name);
    const s = await readState(file);
    if (s.capturedSinceCommit <= 0 || !s.ovSession) continue;
    const stuck = s.destination !== undefined && s.destination !== here
      ? `captured for another server or identity: install again for it (\`${await installFor(ctx, name)}\`)`
      : s.inflight?.keys.length
      ? "a capture of it was cut off mid-send: a Kimi session start settles and commits it once idle"
      : undefined;
    out.push({ file, ovSession: s.ovSession, messages: s.capturedSinceCommit, stuck });
  }
  return out;
}

/**
 * The step, first of a last purge's: commits what waits (a commit that cannot be sent is queued, and the
 * queue is kept) and notes what was not committed. None when nothing waits; a refusal (a string) when a
 * session's captures cannot be committed now, unless `drop` (`--yes`): its state would go with them.
 */
export async function purgeCommitStep(
  ctx: Context,
  plan: Plan,
  drop: boolean,
): Promise<Step | string | undefined> {
  const dir = hookStateDir(ctx.env);
  const { config } = await loadConfig(ctx.env, ctx.cwd);
  const waiting = await waitingCommits(ctx, dir, await sessionDestination(config));
  const stuck = waiting.filter((w) => w.stuck);
  if (stuck.length && !drop) {
    const cmd = commandName(ctx.env);
    return `${
      stuck.map((w) =>
        `${w.ovSession} holds ${w.messages} captured message(s) OpenViking has not committed, ${w.stuck}`
      ).join("; ")
    }. ` +
      `Then run \`${cmd} uninstall --purge\` again: it commits them before their state goes. ` +
      `To drop them, run \`${cmd} uninstall --purge --yes\`. Nothing was changed.`;
  }
  if (!waiting.length) return undefined;
  const messages = waiting.reduce((n, w) => n + w.messages, 0);
  return {
    describe:
      `commit the ${messages} captured message(s) of ${waiting.length} session(s) waiting for a commit now`,
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
          if (s.inflight?.keys.length) return { value: "a capture of it was cut off mid-send" };
          // Out of time (a hung server): queued, not sent, so it is kept with the queue.
          const late = budget.remaining() < 250;
          const outcome = await commitSession(client, s.ovSession, {
            budget,
            pendingDir: pendingDir(ctx.env),
            key: `${s.ovSession}:${s.lastAckedKey ?? "none"}`,
            queueOnly: late || await hasUnsent(pendingDir(ctx.env), s.ovSession),
          });
          if (outcome.kind === "failed") return { value: outcome.message };
          return { state: { ...s, capturedSinceCommit: 0 }, value: outcome.kind };
        }, { waitMs: 5000, durable: true }).catch((e) => ({ acquired: true as const, value: String(e) }));
        const value = res.acquired ? res.value : "its state stayed locked by a running hook";
        const what = `${w.ovSession} (${w.messages} message(s))`;
        if (value === "committed" || value === "done") done.push(what);
        else if (value === "queued") queued.push(what);
        else if (value === "elsewhere") {
          missed.push(`${what}: captured for another server or identity (--yes)`);
        } else if (value === "rejected") {
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
      const said = done.length ? `committed what waited for a commit: ${done.join(", ")}` : undefined;
      return { message: said };
    },
  };
}
