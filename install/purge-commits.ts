/**
 * What `uninstall --purge` does about the idle commits before it deletes the hook state: what waits for a
 * commit on the server configured now is committed, within a bound, or queued; another server's or
 * identity's gets its commit queued for it (the queue stays, and the replay that sends it there is named); a
 * capture cut off mid-send is named. The home's idle watch (memory/idle-commit.ts) ends within a second of the
 * hook state going; the copy sweep after waits for it (install/program.ts).
 */

import type { Context, Plan, Step } from "./transaction.ts";
import { dirName, hookStateDir, joinPath, ledgerDir, pendingDir } from "../lib/paths.ts";
import { readLedger } from "../memory/ledger.ts";
import { sessionDestination } from "../memory/context.ts";
import {
  commitCaptured,
  commitKey,
  committed,
  isFor,
  type SessionState,
  type Uncommitted,
  uncommitted,
  updateState,
} from "../memory/state.ts";
import { waitingSessions } from "../memory/idle-commit.ts";
import { Budget, clientOptions, createClient } from "../openviking/client.ts";
import { loadConfig } from "../openviking/config.ts";
import {
  type Destination,
  destinationOf,
  elsewhereWords,
  QUEUE_SUBDIR,
  REJECTED_SUBDIR,
  SessionQueue,
} from "../openviking/queue.ts";
import { commandName } from "../lib/self.ts";
import { wrap } from "../lib/columns.ts";

/** The time all of a purge's commits get together. */
const COMMIT_BUDGET_MS = 10_000;

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

/** `lines` wrapped to the report width, continuations indented; a command line (indented 4) stays whole. */
const wrapped = (lines: string[]) =>
  lines.flatMap((l) => l.startsWith("    ") ? [l] : wrap(l, `${/^ */.exec(l)![0]}  `)).join("\n");

/**
 * The step, first of a last purge's: commits what waits (a commit that cannot be sent is queued, and the
 * queue is kept), queues another destination's commit for it, and notes what was not committed. None when
 * nothing waits; a refusal (a string) when a session's captures can be neither, unless `drop` (`--yes`):
 * its state would go with them.
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
  if (!waiting.length) return undefined;
  const messages = waiting.reduce((n, w) => n + count(w.state), 0);
  return {
    describe:
      `commit the ${messages} captured message(s) of ${waiting.length} session(s) waiting for a commit now`,
    run: async () => {
      const client = createClient(clientOptions(config, "", ctx.fetch ? { fetch: ctx.fetch } : {}));
      const to = { budget: new Budget(COMMIT_BUDGET_MS), pendingDir: pending };
      const [done, queued, missed] = [[] as string[], [] as string[], [] as string[]];
      const away: (Destination & { what: string })[] = [];
      const kept = joinPath(pending, REJECTED_SUBDIR);
      const refused =
        `OpenViking refused the commit (kept in ${kept}: install again and run replay --rejected)`;
      for (const w of waiting) {
        const res = await updateState<string | undefined>(
          { file: w.file, lock: `${w.file}.lock` },
          async (start) => {
            let s = start;
            const sid = s.ovSession;
            const why = sid && await stuckOf(ctx, w.file, s, here);
            for (const u of sid && !why ? uncommitted(s) : []) {
              const what = `${sid} (${u.captured} message(s))`;
              const dest = isFor(u, here) ? undefined : await whereTo(ctx, w.file, u);
              if (dest) {
                const queue = await SessionQueue.open(pending, sid!, dest).catch(() => undefined);
                if (!await queue?.commit(commitKey(sid!, u))) {
                  missed.push(`${what}: the queue cannot be written`);
                } else {
                  s = committed(s, u);
                  away.push({ ...dest, what });
                }
                continue;
              }
              const { state, outcome: o } = await commitCaptured(client, sid!, s, here, to);
              s = state;
              if (o.kind === "committed") done.push(what);
              else if (o.kind === "queued") queued.push(what);
              else missed.push(`${what}: ${o.kind === "failed" ? o.message : refused}`);
            }
            if (why) missed.push(`${sid} (${count(s)} message(s)): ${why} (--yes)`);
            return { state: s, value: undefined };
          },
          { waitMs: 5000, durable: true },
        ).catch((e) => ({ acquired: true as const, value: String(e) }));
        const what = `${w.state.ovSession} (${count(w.state)} message(s))`;
        if (!res.acquired) missed.push(`${what}: its state stayed locked by a running hook`);
        else if (res.value) missed.push(`${what}: ${res.value}`);
      }
      if (queued.length) {
        plan.notes.push(
          `Queued: the commit of ${queued.join(", ")}, in ${joinPath(pending, QUEUE_SUBDIR)} ` +
            `(the server did not take it now): install again and the next session start replays it (or run "${cmd} replay").`,
        );
      }
      const elsewhere = elsewhereWords(away.map((d) => ({ ...d, messages: 0, commits: 1 })));
      if (elsewhere) {
        const what = away.map((d) => d.what).join(", ");
        plan.notes.push(wrapped([
          `Queued: the commit of ${what}, in ${joinPath(pending, QUEUE_SUBDIR)}; ${elsewhere.summary}: ` +
          `install again, then ${elsewhere.fix}.`,
        ]));
      }
      if (missed.length) plan.notes.push(`Not committed: ${missed.join("; ")}.`);
      const said = done.length ? `committed what waited for a commit: ${done.join(", ")}` : undefined;
      return { message: said };
    },
  };
}
