/**
 * A run of install or uninstall: what it needs (injectable for tests), its plan — ordered steps, the
 * text-file changes they make, notes for the user — and carrying the plan out: every check first, so every
 * refusal comes before the first write; a dry run prints the diffs instead; a step that still fails mid-way
 * rolls back the steps already taken.
 */

import { type Env, processEnv } from "../lib/paths.ts";
import { invocationCwd } from "../lib/self.ts";
import { checkChange, describeFsError, type FileChange, isFsError, readText, undoAll } from "./files.ts";
import { unifiedDiff } from "./diff.ts";
import { currentOs, currentSelf, type OsFamily, type Self } from "./placement.ts";
import type { CredentialArgs } from "./ovcli.ts";
import { type Done, fileStep, type Step } from "./steps.ts";

/** Where messages go (tests capture them). */
export interface Output {
  info(line: string): void;
  error(line: string): void;
}

const consoleOutput: Output = { info: (l) => console.log(l), error: (l) => console.error(l) };

/** Parsed options of install / uninstall. */
export interface InstallOptions {
  mode?: "config" | "plugin";
  kimiHome?: string;
  credentials: CredentialArgs;
  dryRun: boolean;
  yes: boolean;
  purge: boolean;
}

/** Everything a run needs, injectable for tests. */
export interface Context {
  env: Env;
  self: Self;
  os: OsFamily;
  out: Output;
  now: Date;
  cwd: string;
  /** The Deno a program copy records (default: the one running). */
  deno?: string;
  /** How install asks the server whether it answers (default: fetch). */
  fetch?: typeof fetch;
}

/** The context of a real run: this process, its environment, the console, now. */
export async function defaultContext(): Promise<Context> {
  return {
    env: processEnv(),
    self: await currentSelf(),
    os: currentOs(),
    out: consoleOutput,
    now: new Date(),
    cwd: invocationCwd(),
  };
}

/**
 * A note for the user after the run: the same words whatever happens, or what is said once it is done and,
 * in a dry run that would change something, what would be (nothing runs yet).
 */
export type Note = string | { done: string; planned: string };

/** A planned run: ordered steps; text-file changes are steps too. */
export interface Plan {
  steps: Step[];
  changes: FileChange[];
  notes: Note[];
  now: Date;
}

/** A note's words: as done, or as planned (a dry run with changes). */
function noteText(note: Note, planned: boolean): string {
  return typeof note === "string" ? note : planned ? note.planned : note.done;
}

/** An empty plan made at `now`. */
export function newPlan(now: Date): Plan {
  return { steps: [], changes: [], notes: [], now };
}

/** Plans a change to one of Kimi's files (kept as a `.bak` unless all of it is ours) and the step that writes it. */
export function planFile(
  plan: Plan,
  path: string,
  before: string | undefined,
  after: string | undefined,
  what: string,
  backup: FileChange["backup"] = "bak",
): void {
  const change: FileChange = { path, before, after, backup };
  plan.changes.push(change);
  plan.steps.push(fileStep(change, what));
}

/** Prints what a dry run would do: the steps, the diff of every file (removed lines first), the notes. */
function printDryRun(plan: Plan, out: Output): void {
  out.info("Dry run: nothing was changed. These changes would be made:");
  for (const step of plan.steps) out.info(`  - ${step.describe}`);
  for (const change of plan.changes) {
    const show = change.display ?? ((t: string) => t);
    const diff = unifiedDiff(
      change.path,
      change.before === undefined ? undefined : show(change.before),
      change.after === undefined ? undefined : show(change.after),
    );
    if (diff) out.info(diff.trimEnd());
  }
  for (const note of plan.notes) out.info(noteText(note, true));
}

/** Why the plan cannot be carried out, found before anything is written; undefined when it can. */
async function checkPlan(plan: Plan): Promise<string | undefined> {
  for (const change of plan.changes) {
    const problem = await checkChange(change);
    if (problem) return problem;
  }
  for (const step of plan.steps) {
    const problem = await step.check?.();
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Takes the steps in order. When one fails, the ones already taken are rolled back (files get their exact
 * previous bytes) and the error says so; returns that error, or undefined when every step succeeded.
 */
async function execute(plan: Plan, out: Output): Promise<string | undefined> {
  for (const change of plan.changes) {
    if (change.displayOnly || change.before === change.after) continue;
    const now = await readText(change.path);
    if (!now.ok || now.text !== change.before) {
      return `${change.path} changed while openviking-kimi was working on it; run the command again; ` +
        "nothing was changed.";
    }
  }
  const done: Done[] = [];
  for (const step of plan.steps) {
    try {
      done.push(await step.run());
    } catch (error) {
      const reason = isFsError(error)
        ? `${step.describe} failed: ${describeFsError(error)}`
        : (error as Error).message;
      const taken = done.filter((d) => d.undo);
      if (taken.length === 0) return `${reason}; nothing was changed. Fix that and run again.`;
      const failed = await undoAll(taken.map((d) => d.undo!));
      const names = taken.flatMap((d) => (d.changed ? [d.changed] : []));
      if (failed.length === 0) {
        return `${reason}. Rolled back the changes already made: ${names.join(", ")} as before, so ` +
          "nothing was changed. Fix that and run again.";
      }
      return `${reason}. Rolled back the changes already made (${names.join(", ")}), except: ${
        failed.join("; ")
      }. The previous content of each file is in its .bak copy.`;
    }
  }
  const finished: string[] = [];
  for (const d of done) finished.push(...(await d.commit?.() ?? []));
  for (const d of done) if (d.message) out.info(`  ✓ ${d.message}`);
  for (const line of finished) out.info(`  ✓ ${line}`);
  for (const note of plan.notes) out.info(noteText(note, false));
  return undefined;
}

/** How a run ends: its command's name (for errors), what it says before and after applying. */
export interface Outcome {
  command: "install" | "uninstall";
  dryRun: boolean;
  /** Said before the first step is taken. */
  start: string;
  /** Said once every step succeeded (made then: it may name what the steps placed). */
  done?: string | (() => string);
  /** Said when there is nothing to do (no step at all). */
  nothing: string;
}

/** Reports `message` as the run's error; returns the exit code 1. */
export function fail(out: Output, command: Outcome["command"], message: string): number {
  out.error(`openviking-kimi ${command}: ${message}`);
  return 1;
}

/** Checks the plan, then prints it (dry run) or carries it out; returns the exit code. */
export async function carryOut(plan: Plan, out: Output, outcome: Outcome): Promise<number> {
  const problem = await checkPlan(plan);
  if (problem) return fail(out, outcome.command, problem);
  if (plan.steps.length === 0) {
    out.info(`${outcome.dryRun ? "Dry run: nothing" : "Nothing"} to change: ${outcome.nothing}`);
    for (const note of plan.notes) out.info(noteText(note, false)); // it is all in place: as done
    return 0;
  }
  if (outcome.dryRun) {
    printDryRun(plan, out);
    return 0;
  }
  out.info(outcome.start);
  const failed = await execute(plan, out);
  if (failed) return fail(out, outcome.command, failed);
  if (outcome.done) out.info(typeof outcome.done === "string" ? outcome.done : outcome.done());
  return 0;
}
