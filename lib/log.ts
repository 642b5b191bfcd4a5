/** JSONL debug log: off unless `OPENVIKING_DEBUG`; one line per stage; secrets are never written. */

import { ensurePrivateDir, openAppendSync, settled } from "./fs.ts";
import { dirName } from "./paths.ts";
import { scrub } from "./redact.ts";

/** A stage logger bound to one command run: `stage` records one, `flush` waits until every line is on disk. */
export type Logger = { stage(stage: string, data?: Record<string, unknown>): void; flush(): Promise<void> };

/** A logger that drops everything. */
export const silentLogger: Logger = { stage() {}, flush: () => Promise.resolve() };

/** Appends `line` to the file at `path` in one write (a link or a file not ours is refused). */
function appendLine(path: string, line: string): void {
  using file = openAppendSync(path); // undefined when replaced while opened: one line is not worth a retry
  file?.writeSync(new TextEncoder().encode(line));
}

/** Creates a logger appending to `path` when `enabled`; `secrets` are masked wherever they appear. */
export function createLogger(
  options: { enabled: boolean; path: string; source: string; secrets?: string[] },
): Logger {
  if (!options.enabled) return silentLogger;
  let chain: Promise<void> = ensurePrivateDir(dirName(options.path)).catch(() => {});
  const secrets = (options.secrets ?? []).filter(Boolean);
  return {
    stage(stage, data) {
      const line = JSON.stringify({
        ts: new Date().toISOString(),
        pid: Deno.pid,
        source: options.source,
        stage,
        ...(data ? scrub(data, secrets) as Record<string, unknown> : {}),
      });
      chain = chain.then(() => settled(() => appendLine(options.path, `${line}\n`)).catch(() => {}));
    },
    flush: () => chain,
  };
}
