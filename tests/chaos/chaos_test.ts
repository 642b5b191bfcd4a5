/** The fault campaign: CHAOS_SEEDS schedules from CHAOS_SEED, CHAOS_PARALLEL at a time (campaign.ts). */

import { assertEquals } from "../support/assert.ts";
import { FAULT_KINDS, runSchedule, type ScheduleResult } from "./campaign.ts";

const SEEDS = Number(Deno.env.get("CHAOS_SEEDS") ?? 12);
const BASE = Number(Deno.env.get("CHAOS_SEED") ?? Date.now() % 1_000_000);
/** Schedules run side by side (each mostly waits on its processes and timers). */
const PARALLEL = Number(Deno.env.get("CHAOS_PARALLEL") ?? 2);
/** The summary's names, and the result field each sums (the same name when none is given). */
const SUMS = ("turns messages=expected delivered lost duplicates kill-explained=killExplained " +
  "lost-reply-writes=lostReplyWrites kills worker-kills=workerKills faults hook-runs=hookRuns " +
  "out-of-order=outOfOrder refused-then-resent=resentRejected mid-run-files-parsed=snapshotFiles " +
  "abandoned-claims=abandoned orphan-temps=orphanTemps").split(" ").map((w) => w.split("="));

Deno.test({
  name: `chaos: ${SEEDS} fault schedules from CHAOS_SEED=${BASE} lose nothing, duplicate only lost replies`,
  ignore: Deno.build.os !== "linux",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const started = Date.now();
    const results: ScheduleResult[] = [];
    const failures: string[] = [];
    console.log(`chaos: CHAOS_SEED=${BASE} CHAOS_SEEDS=${SEEDS}`);
    let next = 0;
    const lane = async () => {
      for (let seed = BASE + next++; seed < BASE + SEEDS; seed = BASE + next++) {
        const r = await runSchedule(seed).catch((e: Error) => e);
        const again = `CHAOS_SEED=${seed} CHAOS_SEEDS=1`;
        if (r instanceof Error) {
          failures.push(`${again}: ${r.stack ?? r}`);
          continue;
        }
        results.push(r);
        const counts = SUMS.map(([name, field = name]) => `${name}=${r[field as keyof ScheduleResult]}`);
        console.log(`chaos seed ${seed}: ${counts.join(" ")} ${(r.durationMs / 1000).toFixed(1)} s`);
        if (r.violations.length) failures.push(`${again}:\n  ${r.violations.join("\n  ")}`);
        if (r.violations.length || Deno.env.get("CHAOS_DEBUG")) {
          console.log(`  ${[...r.violations.map((v) => `VIOLATION ${v}`), ...r.detail].join("\n  ")}`);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, PARALLEL) }, lane));
    const kinds = new Set(results.flatMap((r) => r.faultKinds));
    if (results.length >= FAULT_KINDS && kinds.size < FAULT_KINDS) {
      failures.push(`only ${kinds.size} of ${FAULT_KINDS} fault kinds drawn in ${results.length} schedules`);
    }
    const sum = (field: string) =>
      results.reduce((a, r) => a + (r[field as keyof ScheduleResult] as number), 0);
    const counts = SUMS.map(([name, field = name]) => `${name}=${sum(field)}`);
    console.log(
      `CHAOS SUMMARY: schedules=${results.length} seed=${BASE} ${counts.join(" ")} ` +
        `fault-kinds=${kinds.size}/${FAULT_KINDS} failures=${failures.length} ` +
        `duration=${((Date.now() - started) / 1000).toFixed(1)}s`,
    );
    assertEquals(failures, [], failures.join("\n"));
  },
});
