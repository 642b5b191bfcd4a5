/** The fault campaign. */

import { assertEquals } from "../support/assert.ts";
import { FAULT_KINDS, runSchedule, type ScheduleResult } from "./campaign.ts";

const SEEDS = Number(Deno.env.get("CHAOS_SEEDS") ?? 12);
const BASE = Number(Deno.env.get("CHAOS_SEED") ?? Date.now() % 1_000_000);
/** Schedules run side by side (each mostly waits on its processes and timers). */
const PARALLEL = Number(Deno.env.get("CHAOS_PARALLEL") ?? 2);

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
      for (let i = next++; i < SEEDS; i = next++) {
        const seed = BASE + i;
        let r: ScheduleResult;
        try {
          r = await runSchedule(seed);
        } catch (error) {
          failures.push(`CHAOS_SEED=${seed} CHAOS_SEEDS=1: ${(error as Error).stack ?? error}`);
          continue;
        }
        results.push(r);
        console.log(
          `chaos seed ${seed}: ${r.turns} turns, ${r.delivered}/${r.expected} delivered, ${r.duplicates} dup ` +
            `(${r.killExplained} kill, ${r.lostReplyWrites} lost-reply), ${r.kills} kills, ${r.faults} faults, ` +
            `${r.hookRuns} runs, ${r.outOfOrder} out of order, ${r.resentRejected} refused then resent, ` +
            `${(r.durationMs / 1000).toFixed(1)} s`,
        );
        if (r.violations.length) {
          failures.push(`CHAOS_SEED=${seed} CHAOS_SEEDS=1:\n  ${r.violations.join("\n  ")}`);
        }
        if (r.violations.length || Deno.env.get("CHAOS_DEBUG")) {
          console.log(`  ${[...r.violations.map((v) => `VIOLATION ${v}`), ...r.detail].join("\n  ")}`);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, PARALLEL) }, lane));
    const sum = (f: (r: ScheduleResult) => number) => results.reduce((a, r) => a + f(r), 0);
    const kinds = new Set(results.flatMap((r) => r.faultKinds));
    if (results.length >= FAULT_KINDS && kinds.size < FAULT_KINDS) {
      failures.push(`only ${kinds.size} of ${FAULT_KINDS} fault kinds drawn in ${results.length} schedules`);
    }
    // Summary names and the result field each sums (the same name when none is given).
    const sums = ("turns messages=expected delivered lost duplicates kill-explained=killExplained " +
      "lost-reply-writes=lostReplyWrites kills worker-kills=workerKills faults fault-kinds hook-runs=hookRuns " +
      "out-of-order=outOfOrder refused-then-resent=resentRejected mid-run-files-parsed=snapshotFiles " +
      "abandoned-claims=abandoned orphan-temps=orphanTemps").split(" ").map((w) => w.split("="));
    const counts = [
      ["schedules", results.length],
      ["seed", BASE],
      ...sums.map((
        [name, field = name],
      ) => [
        name,
        name === "fault-kinds"
          ? `${kinds.size}/${FAULT_KINDS}`
          : sum((r) => r[field as keyof ScheduleResult] as number),
      ]),
      ["failures", failures.length],
      ["duration", `${((Date.now() - started) / 1000).toFixed(1)}s`],
    ];
    console.log(`CHAOS SUMMARY: ${counts.map(([k, v]) => `${k}=${v}`).join(" ")}`);
    assertEquals(failures, [], failures.join("\n"));
  },
});
