/**
 * The processes of one chaos sandbox: hooks and commands started through the real entry point (`deno run <cli
 * task flags> main.ts …`), the detached workers they leave behind (found with `ps e` by their environment,
 * which names this sandbox's HOME), and kill -9 by pid.
 */

import { cliArgs, denoEnv, spawnFed } from "../support/run.ts";

/** A process this sandbox started; a `writer` sends session writes itself (interrupt, a worker, replay). */
export interface Run {
  origin: string;
  /** `hook <event>` or `replay`. */
  label: string;
  writer: boolean;
  child: Deno.ChildProcess;
  ended: Promise<{ code: number; signal: string | null; stdout: string; stderr: string }>;
  finished: boolean;
  killed: boolean;
}

/** A kill -9 that was delivered: of whom, by pid. */
export type Kill = Pick<Run, "origin" | "label" | "writer"> & { pid: number };

/** One process as `ps` shows it: pid, state and the `K=V` words of its environment. */
type PsRow = { pid: number; zombie: boolean; words: Set<string> };

let psCache: { at: number; rows: Promise<PsRow[]> } | undefined;

/**
 * Every process of this user with its environment, via `ps e` (reading /proc needs --allow-all, which the
 * test command does not grant).
 */
function ps(): Promise<PsRow[]> {
  if (psCache && Date.now() - psCache.at < 30) return psCache.rows;
  const rows = new Deno.Command("ps", { args: ["axeww", "-o", "pid=,stat=,command="], stdout: "piped" })
    .output()
    .then((out) =>
      new TextDecoder().decode(out.stdout).split("\n").flatMap((line): PsRow[] => {
        const m = /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(line);
        return m
          ? [{ pid: Number(m[1]), zombie: m[2].startsWith("Z"), words: new Set(m[3].split(" ")) }]
          : [];
      })
    );
  psCache = { at: Date.now(), rows };
  return rows;
}

/** The origin of a request the fake recorded: the tag its API key ends with (`<key>-<origin>`). */
export const originOfRequest = (headers: Record<string, string>): string =>
  headers.authorization?.split("-").at(-1) ?? "";

/** Starts, finds and kills the processes of one sandbox. */
export class Processes {
  readonly runs: Run[] = [];
  readonly kills: Kill[] = [];
  private counter = 0;
  private argv: string[] | undefined;

  constructor(readonly home: string, readonly env: Record<string, string>) {}

  /** Starts `openviking-kimi <args>` with `stdin`, as a fresh origin (its key's tag, which replay keeps not). */
  async start(
    args: string[],
    stdin: string | Uint8Array,
    options: { extraEnv?: Record<string, string>; writer?: boolean } = {},
  ): Promise<Run> {
    const origin = `o${++this.counter}`;
    const env = {
      ...denoEnv(),
      ...this.env,
      OPENVIKING_API_KEY: `${this.env.OPENVIKING_API_KEY}-${origin}`,
      ...options.extraEnv,
    };
    const argv = [...(this.argv ??= await cliArgs()), ...args];
    const child = await spawnFed(Deno.execPath(), argv, { env, clearEnv: true, stdin });
    const text = (b: Uint8Array) => new TextDecoder().decode(b);
    const ended = child.output().then((o) => ({ ...o, stdout: text(o.stdout), stderr: text(o.stderr) }));
    const run: Run = {
      origin,
      label: args.join(" "),
      writer: options.writer ?? false,
      child,
      ended,
      finished: false,
      killed: false,
    };
    ended.then(() => run.finished = true);
    this.runs.push(run);
    return run;
  }

  /** kill -9 of a started process that is still running; false when it had already ended. */
  killRun(run: Run): boolean {
    if (run.finished) return false;
    try {
      run.child.kill("SIGKILL");
    } catch {
      return false;
    }
    run.killed = true;
    this.kills.push({ origin: run.origin, label: run.label, writer: run.writer, pid: run.child.pid });
    return true;
  }

  /**
   * Live detached processes of this sandbox (ones we did not start), with their origin: hook workers, and the
   * `replay` an interrupt starts.
   */
  async workers(): Promise<{ pid: number; origin: string }[]> {
    const ours = new Set(this.runs.map((r) => r.child.pid));
    return (await this.live())
      .filter((row) =>
        !ours.has(row.pid) && (row.words.has("OPENVIKING_KIMI_HOOK_WORKER=1") || row.words.has("replay"))
      )
      .map((row) => ({
        pid: row.pid,
        origin: [...row.words].find((w) => w.startsWith("OPENVIKING_API_KEY="))?.split("-").at(-1) ?? "",
      }));
  }

  /** kill -9 of a detached worker by pid (found by `workers()` a moment ago). */
  killWorker(worker: { pid: number; origin: string }): void {
    try {
      Deno.kill(worker.pid, "SIGKILL");
      this.kills.push({ origin: worker.origin, label: "detached worker", writer: true, pid: worker.pid });
    } catch { /* it had ended */ }
  }

  /** Live (not zombie) processes whose environment names this sandbox's HOME. */
  async live(): Promise<PsRow[]> {
    return (await ps()).filter((row) =>
      !row.zombie && row.pid !== Deno.pid && row.words.has(`HOME=${this.home}`)
    );
  }

  /** Waits until every process of the sandbox is gone (detached workers included). */
  async settle(timeoutMs: number): Promise<void> {
    await Promise.all(this.runs.map((r) => r.ended));
    const end = Date.now() + timeoutMs;
    for (let left = await this.live(); left.length > 0; left = await this.live()) {
      if (Date.now() > end) {
        throw new Error(
          `processes still running after ${timeoutMs} ms: ${left.map((r) => r.pid).join(", ")}`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
