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
    const counts: [string, number | string][] = [
      ["schedules", results.length],
      ["seed", BASE],
      ["turns", sum((r) => r.turns)],
      ["messages", sum((r) => r.expected)],
      ["delivered", sum((r) => r.delivered)],
      ["lost", sum((r) => r.lost)],
      ["duplicates", sum((r) => r.duplicates)],
      ["kill-explained", sum((r) => r.killExplained)],
      ["lost-reply-writes", sum((r) => r.lostReplyWrites)],
      ["kills", sum((r) => r.kills)],
      ["worker-kills", sum((r) => r.workerKills)],
      ["faults", sum((r) => r.faults)],
      ["fault-kinds", `${kinds.size}/${FAULT_KINDS}`],
      ["hook-runs", sum((r) => r.hookRuns)],
      ["out-of-order", sum((r) => r.outOfOrder)],
      ["refused-then-resent", sum((r) => r.resentRejected)],
      ["mid-run-files-parsed", sum((r) => r.snapshotFiles)],
      ["abandoned-claims", sum((r) => r.abandoned)],
      ["orphan-temps", sum((r) => r.orphanTemps)],
      ["failures", failures.length],
      ["duration", `${((Date.now() - started) / 1000).toFixed(1)}s`],
    ];
    console.log(`CHAOS SUMMARY: ${counts.map(([k, v]) => `${k}=${v}`).join(" ")}`);
    assertEquals(failures, [], failures.join("\n"));
  },
});
