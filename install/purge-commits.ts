/**
 * What `uninstall --purge` does about the idle commits before it deletes the hook state: what waits for a
 * commit is committed now, within a bound, or queued, or named. The home's idle watch (memory/idle-commit.ts)
 * ends within a second of the hook state going; the copy sweep after waits for it (install/program.ts).
 */

import type { Context, Plan, Step } from "./transaction.ts";
import { dirName, hookStateDir, joinPath, ledgerDir, pendingDir } from "../lib/paths.ts";
import { readLedger } from "../memory/ledger.ts";
import { sessionDestination } from "../memory/context.ts";
import { commitCaptured, type SessionState, updateState } from "../memory/state.ts";
import { waitingSessions } from "../memory/idle-commit.ts";
import { Budget, clientOptions, createClient } from "../openviking/client.ts";
import { loadConfig } from "../openviking/config.ts";
import { QUEUE_SUBDIR, REJECTED_SUBDIR } from "../openviking/queue.ts";
import { commandName } from "../lib/self.ts";

/** The time all of a purge's commits get together. */
const COMMIT_BUDGET_MS = 10_000;

/** The install command for the server and identity state `file`'s captures went to (its ledger says). */
async function installFor(ctx: Context, file: string): Promise<string> {
  const entries = await readLedger(ledgerDir(ctx.env), file.slice(dirName(file).length + 1, -".json".length));
  const origin = entries.flatMap((e) => (e.kind !== "prompt" && e.origin ? [e.origin] : [])).at(-1);
  const [account, user] = origin?.who.split("/") ?? [];
  const who = `${account ? ` --account ${account}` : ""}${user ? ` --user ${user}` : ""}`;
  return `${commandName(ctx.env)} install --url ${origin?.url ?? "<its URL>"}${who}`;
}

const ELSEWHERE = "captured for another server or identity";

/** Why the purge cannot commit `s` (its writes go to `here`; a state of none: there too), or undefined. */
const stuckOf = (s: SessionState, here: string) =>
  s.destination !== undefined && s.destination !== here
    ? ELSEWHERE
    : s.inflight?.keys.length
    ? "a capture of it was cut off mid-send" // as in memory/idle-commit.ts, never committed over
    : undefined;

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
  const { config } = await loadConfig(ctx.env, ctx.cwd);
  const here = await sessionDestination(config);
  const waiting = await waitingSessions(hookStateDir(ctx.env), { ms: 0 });
  const [cmd, pending] = [commandName(ctx.env), pendingDir(ctx.env)];
  const stuck = waiting.map((w) => ({ ...w, why: stuckOf(w.state, here) })).filter((w) => w.why);
  if (stuck.length && !drop) {
    const said = await Promise.all(
      stuck.map(async ({ file, state, why }) =>
        `${state.ovSession} holds ${state.capturedSinceCommit} captured message(s) OpenViking has not committed, ${why}: ${
          why === ELSEWHERE
            ? `install again for it (\`${await installFor(ctx, file)}\`)`
            : "a Kimi session start settles and commits it once idle"
        }`
      ),
    );
    return `${said.join("; ")}. Then run \`${cmd} uninstall --purge\` again: it commits them before their ` +
      `state goes. To drop them, run \`${cmd} uninstall --purge --yes\`. Nothing was changed.`;
  }
  if (!waiting.length) return undefined;
  const messages = waiting.reduce((n, w) => n + w.state.capturedSinceCommit, 0);
  return {
    describe:
      `commit the ${messages} captured message(s) of ${waiting.length} session(s) waiting for a commit now`,
    run: async () => {
      const client = createClient(clientOptions(config, "", ctx.fetch ? { fetch: ctx.fetch } : {}));
      const to = { budget: new Budget(COMMIT_BUDGET_MS), pendingDir: pending };
      const [done, queued, missed] = [[] as string[], [] as string[], [] as string[]];
      const kept = joinPath(pending, REJECTED_SUBDIR);
      const refused =
        `OpenViking refused the commit (kept in ${kept}: install again and run replay --rejected)`;
      for (const w of waiting) {
        const res = await updateState<string>({ file: w.file, lock: `${w.file}.lock` }, async (s) => {
          if (s.capturedSinceCommit <= 0 || !s.ovSession) return { value: "committed" }; // by another run
          const why = stuckOf(s, here);
          if (why) return { value: why === ELSEWHERE ? `${why} (--yes)` : why };
          const { state, outcome: o } = await commitCaptured(client, s.ovSession, s, here, to);
          return { state, value: o.kind === "failed" ? o.message : o.kind === "rejected" ? refused : o.kind };
        }, { waitMs: 5000, durable: true }).catch((e) => ({ acquired: true as const, value: String(e) }));
        const value = res.acquired ? res.value : "its state stayed locked by a running hook";
        const what = `${w.state.ovSession} (${w.state.capturedSinceCommit} message(s))`;
        if (value === "committed") done.push(what);
        else if (value === "queued") queued.push(what);
        else missed.push(`${what}: ${value}`);
      }
      if (queued.length) {
        plan.notes.push(
          `Queued: the commit of ${queued.join(", ")}, in ${joinPath(pending, QUEUE_SUBDIR)} ` +
            `(the server did not take it now): install again and the next session start replays it (or run "${cmd} replay").`,
        );
      }
      if (missed.length) plan.notes.push(`Not committed: ${missed.join("; ")}.`);
      const said = done.length ? `committed what waited for a commit: ${done.join(", ")}` : undefined;
      return { message: said };
    },
  };
}
