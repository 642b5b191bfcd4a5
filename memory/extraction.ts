/**
 * The extraction alarm: commits that make no memory, again and again. A detached worker (session start's)
 * asks OpenViking for our newest commit tasks and keeps the verdict in a private file of the shared state
 * directory, there only while the alarm is on; a session's first prompt reads that file (no network) and
 * tells the session in one line; `status` and `doctor` ask the server themselves.
 */

import * as z from "zod/mini";
import type { OpenVikingClient } from "../openviking/client.ts";
import { originOf } from "../openviking/config.ts";
import { readJson, writeFileAtomic } from "../lib/fs.ts";
import { asRecord, isRecord } from "../lib/parsed.ts";
import { joinPath } from "../lib/paths.ts";
import { SESSION_PREFIX } from "./context.ts";

/**
 * Failed extractions in a row that sound the alarm: a failure is never a normal outcome, and one or two can be
 * a provider's passing error the next commit does not meet; three in a row is a cause that stays.
 */
export const FAILED_IN_A_ROW = 3;
/**
 * Commits in a row that made nothing (failed, or completed without a memory): a turn with nothing worth
 * keeping is normal, so it takes more of them.
 */
export const EMPTY_IN_A_ROW = 5;

/** The alarm: how many of the newest commits made nothing, how many failed, the newest failure's words. */
const AlarmSchema = z.object({
  origin: z.string(),
  at: z.number(),
  commits: z.number(),
  failed: z.number(),
  error: z.optional(z.string()),
});
export type Alarm = z.infer<typeof AlarmSchema>;

/** Memories a finished commit task made: its `memories_extracted` (`total`, else the sum of its kinds). */
function memoriesMade(task: Record<string, unknown>): number {
  const made = asRecord(asRecord(task.result).memories_extracted);
  const count = (v: unknown) => typeof v === "number" && Number.isFinite(v) ? v : 0;
  return "total" in made ? count(made.total) : Object.values(made).reduce((n: number, v) => n + count(v), 0);
}

/**
 * The verdict of our commit tasks, newest first (pure): the run of finished commits that made nothing from the
 * newest one back, an alarm once it is {@link FAILED_IN_A_ROW} failures or {@link EMPTY_IN_A_ROW} commits long.
 */
export function alarmOf(tasks: readonly unknown[], origin: string, at: number): Alarm | undefined {
  const finished = tasks.filter(isRecord).filter((t) =>
    String(t.resource_id ?? "").startsWith(SESSION_PREFIX) &&
    (t.status === "failed" || t.status === "completed")
  );
  const run = finished.findIndex((t) => t.status === "completed" && memoriesMade(t) > 0);
  const nothing = run < 0 ? finished : finished.slice(0, run);
  const failedRun = nothing.findIndex((t) => t.status !== "failed");
  const failed = failedRun < 0 ? nothing.length : failedRun;
  if (failed < FAILED_IN_A_ROW && nothing.length < EMPTY_IN_A_ROW) return undefined;
  const error = nothing.find((t) => t.status === "failed" && typeof t.error === "string")?.error;
  return {
    origin,
    at,
    commits: nothing.length,
    failed,
    ...(typeof error === "string" ? { error: error.slice(0, 1000) } : {}),
  };
}

/** Commit tasks asked for: the newest, enough for either run. */
const TASKS_ASKED = 20;

/** Asks the server for our newest commit tasks: the alarm, undefined (none), or null (it could not be asked). */
export async function askAlarm(
  client: OpenVikingClient,
  now = Date.now(),
): Promise<Alarm | undefined | null> {
  const list = await client.request("GET", "/api/v1/tasks", z.array(z.unknown()), {
    query: { task_type: "session_commit", limit: TASKS_ASKED },
    peerId: null,
  });
  return list.ok ? alarmOf(list.result, originOf(client.options.baseUrl), now) : null;
}

const alarmFile = (dir: string) => joinPath(dir, "kimicode-extraction-alarm.json");

/** Asks the server and keeps the verdict in `dir` (a detached worker's; an unanswered ask changes nothing). */
export async function checkExtraction(
  client: OpenVikingClient,
  dir: string,
): Promise<Alarm | undefined | null> {
  const alarm = dir ? await askAlarm(client) : null;
  if (alarm) await writeFileAtomic(alarmFile(dir), `${JSON.stringify(alarm)}\n`).catch(() => {});
  else if (alarm === undefined) await Deno.remove(alarmFile(dir)).catch(() => {});
  return alarm;
}

/** The alarm kept in `dir` for `baseUrl`'s server, or undefined (none, another server's, or not one). */
export async function readAlarm(dir: string, baseUrl: string): Promise<Alarm | undefined> {
  const a = AlarmSchema.safeParse(dir ? await readJson(alarmFile(dir)) : undefined);
  return a.success && a.data.origin === originOf(baseUrl) ? a.data : undefined;
}

/** What the alarm says, and the fix (pure): `failed` quotes the server's words for the newest failure. */
export function alarmWords(a: Alarm): { kind: "failed" | "empty"; summary: string; fix: string } {
  const words = a.error?.replace(/\s+/g, " ").trim().slice(0, 200);
  const fix =
    "check the server's model configuration (`vlm`, and `embedding`, in its ov.conf) and its log; " +
    "the next commit after the fix makes memory again";
  if (a.failed >= FAILED_IN_A_ROW) {
    const summary = `the last ${a.failed} memory extractions on the server failed: ${
      words ?? "no reason given"
    }`;
    return { kind: "failed", summary, fix };
  }
  return {
    kind: "empty",
    summary: `the last ${a.commits} commits made no memory${words ? ` (the server said: ${words})` : ""}`,
    fix: `${fix} (a chat model that cannot do extraction makes nothing, silently)`,
  };
}
