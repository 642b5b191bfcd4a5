/** JSONL debug log: off unless `OPENVIKING_DEBUG`; one line per stage; secrets are never written. */

import { ensurePrivateDir } from "./fs.ts";
import { dirName } from "./paths.ts";

/** A stage logger bound to one command run. */
export interface Logger {
  /** Records a stage with optional data. */
  stage(stage: string, data?: Record<string, unknown>): void;
  /** Waits until every line is on disk. */
  flush(): Promise<void>;
}

const SECRET_KEY =
  /^(api[_-]?key|apikey|token|access[_-]?token|secret|password|authorization|bearer|credentials?)$/i;

/** Deep copy of `value` with secret-looking fields and any of `secrets` masked. */
export function scrub(value: unknown, secrets: readonly string[] = [], depth = 0): unknown {
  if (typeof value === "string") {
    let s = value;
    for (const secret of secrets) if (secret.length >= 4) s = s.split(secret).join("***");
    return s.replace(/\b(Bearer)\s+\S+/gi, "$1 ***");
  }
  if (value === null || typeof value !== "object" || depth > 8) return value;
  if (value instanceof Error) return { name: value.name, message: scrub(value.message, secrets, depth + 1) };
  if (Array.isArray(value)) return value.map((v) => scrub(v, secrets, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SECRET_KEY.test(k) && v !== undefined && v !== "" && typeof v !== "boolean"
      ? "***"
      : scrub(v, secrets, depth + 1);
  }
  return out;
}

/** A logger that drops everything. */
export const silentLogger: Logger = { stage() {}, flush: () => Promise.resolve() };

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
      chain = chain.then(() =>
        Deno.writeTextFile(options.path, `${line}\n`, { append: true, create: true, mode: 0o600 }).catch(
          () => {},
        )
      );
    },
    flush: () => chain,
  };
}
