/** `openviking-kimi replay`: replays the pending queue now, prints what happened and records it in the ledger. */

import { adviceForCause, causeOf } from "../runtime/advice.ts";
import { loadConfig } from "../runtime/config.ts";
import { Budget, clientOptions, createClient } from "../runtime/http.ts";
import { queueSummary } from "../runtime/pending.ts";
import { replayAll, replayOptions } from "../runtime/replay.ts";
import { countShared } from "../runtime/pending-shared.ts";
import { pendingDir, processEnv } from "../runtime/paths.ts";
import { ledgerLimits, recordReplay } from "./ledger-entry.ts";
import { commandName } from "../runtime/self.ts";

/** The `replay` command: exit 0 when the queue is empty afterwards, 1 when entries remain. */
export async function replayCommand(): Promise<number> {
  const startedAt = Date.now();
  const env = processEnv();
  const { config, warnings } = await loadConfig(env);
  for (const w of warnings) console.error(`warning: ${w}`);
  const dir = pendingDir(env);
  const client = createClient(clientOptions(config));
  const report = await replayAll(
    dir,
    client,
    replayOptions(config, {
      limit: Number.MAX_SAFE_INTEGER,
      budget: new Budget(Math.max(config.replayBudgetMs, 60_000)),
    }),
  );
  const left = (await queueSummary(dir)).entries + await countShared(dir);
  const cause = report.cause ? causeOf(report.cause) : undefined;
  console.log(JSON.stringify({ ...report, cause, left, server: config.baseUrl }));
  // For `status`: which queued commits this replay delivered (this is also the interrupt's detached replay).
  await recordReplay(env, ledgerLimits(config), { ...report, cause }, startedAt);
  if (left > 0) {
    // Why, in the words doctor uses, with the fix (a redirect names where it points, a refused key says so).
    const why = cause ? adviceForCause(cause, config.baseUrl) : undefined;
    console.error(
      why
        ? `${left} entries are still queued in ${dir}: ${why.summary}\n  fix: ${why.fix}`
        : `${left} entries are still queued in ${dir}; run "${commandName()} doctor" to see why.`,
    );
  }
  return left > 0 ? 1 : 0;
}
