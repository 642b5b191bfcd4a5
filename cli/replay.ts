/** `openviking-kimi replay [--rejected]`: the queue (or the refused writes) sent now, said, and kept in the ledger. */

import { adviceFor, causeOf } from "../openviking/advice.ts";
import { reportJson } from "../lib/neutralize.ts";
import { loadConfig } from "../openviking/config.ts";
import { Budget, createClient } from "../openviking/client.ts";
import {
  elsewhereWords,
  QUEUE_SUBDIR,
  queueSummary,
  REJECTED_SUBDIR,
  replayQueue,
  type ReplayReport,
  setAsideFiles,
  setAsideWords,
} from "../openviking/queue.ts";
import { type Env, joinPath, pendingDir } from "../lib/paths.ts";
import { recordReplay } from "../memory/ledger.ts";
import { commandName } from "../lib/self.ts";

/** What a replay did, in words: what it sent where (and dropped), then what is left (queued, or refused). */
export function renderReplay(r: ReplayReport, left: number, server: string, rejected = false): string {
  const rest = rejected
    ? left ? `${left} refused write(s) are still kept.` : "No refused writes are kept."
    : left
    ? `${left} write(s) are still queued.`
    : "The queue is empty.";
  if (!r.replayed && !r.rejected && !r.expired) {
    return `Replayed nothing to ${server}: ${rest[0].toLowerCase()}${rest.slice(1)}`;
  }
  const done = [
    `${r.messages} message(s) sent`,
    `${r.commitTasks.length} commit(s) started`,
    ...(r.rejected ? [`${r.rejected} refused by OpenViking`] : []),
    ...(r.expired ? [`${r.expired} dropped as too old`] : []),
  ];
  const what = `${r.replayed} ${rejected ? "refused" : "queued"} write(s)`;
  return `Replayed ${what} to ${server}: ${done.join(", ")}.\n${rest}`;
}

/** The `replay` command: exit 0 when the queue (or the rejected place) is empty afterwards, 1 when entries remain. */
export async function replayCommand(options: { json: boolean; rejected: boolean }, env: Env) {
  const startedAt = Date.now();
  const { config, warnings } = await loadConfig(env);
  for (const w of warnings) console.error(`warning: ${w}`);
  const dir = pendingDir(env);
  const report = await replayQueue(dir, createClient(config), {
    limit: Number.MAX_SAFE_INTEGER,
    budget: new Budget(60_000),
    waitUnsure: true,
    rejected: options.rejected,
  });
  const left = (await queueSummary(dir, options.rejected ? REJECTED_SUBDIR : QUEUE_SUBDIR)).entries;
  const place = options.rejected ? joinPath(dir, REJECTED_SUBDIR) : dir;
  const cause = report.cause ? causeOf(report.cause) : undefined;
  const setAside = await setAsideFiles(dir).catch(() => []);
  const aside = setAsideWords(setAside);
  const text = renderReplay(report, left, config.baseUrl, options.rejected);
  console.log(
    options.json
      ? reportJson({ ...report, cause, left, server: config.baseUrl, setAside })
      : text + (aside ? `\n${aside.summary}.\n  fix: ${aside.fix}` : ""),
  );
  await recordReplay(env, config, { ...report, cause }, startedAt);
  if (left > 0) {
    const seconds = Math.max(1, Math.ceil(((report.waitUntil ?? 0) - Date.now()) / 1000));
    const why = cause
      ? adviceFor(cause, config.baseUrl)
      : report.waitUntil === undefined
      ? elsewhereWords(report.elsewhere)
      : {
        summary: `the reply to an earlier write was lost and the server may still be storing it, so it is ` +
          `asked about (and sent if missing) in ${seconds} s`,
        fix: `nothing to do: the next hook sends it; or run "${commandName(env)} replay" again then`,
      };
    const still = `${left} entries are still queued in ${place}`;
    console.error(
      why
        ? `${still}: ${why.summary}\n  fix: ${why.fix}`
        : `${still}; run "${commandName(env)} doctor" to see why.`,
    );
  }
  return left > 0 ? 1 : 0;
}
