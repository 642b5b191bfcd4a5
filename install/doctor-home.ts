/** Doctor's checks of where our files go: a home directory, and state and queue directories we can write. */

import {
  type Env,
  hookStateDir,
  ignoredOverrides,
  noHomeReason,
  orNoHome,
  pendingDir,
} from "../lib/paths.ts";
import { unwritableReason } from "../lib/fs.ts";
import type { Check } from "./check.ts";

/**
 * Where our files go: a failing "home" check without one (hooks then keep nothing and capture nothing), and
 * a failing "state-dirs" check when the hook state or the queue directory cannot be written (probed by
 * writing, so it is true for root and read-only mounts too; directories it had to create are removed).
 */
export async function homeChecks(env: Env): Promise<Check[]> {
  const ignored = ignoredOverrides(env);
  const noHome = noHomeReason(env);
  const state = orNoHome(() => hookStateDir(env));
  const queue = orNoHome(() => pendingDir(env));
  if (noHome && (!state || !queue)) {
    return [{
      id: "home",
      status: "fail",
      summary:
        "HOME is not set (or not an absolute path): the hooks keep no state, capture nothing and read " +
        "no config file; recall uses the OPENVIKING_* environment only",
      detail: ignored.length ? ignored.map((o) => `ignored (not absolute): ${o}`) : undefined,
      fix:
        "start Kimi Code with HOME set to your home directory, or set OPENVIKING_HOME (and KIMI_CODE_HOME) " +
        "to absolute directories",
    }];
  }
  const checks: Check[] = [{
    id: "home",
    status: ignored.length ? "warn" : "ok",
    summary: ignored.length ? "some path settings are not absolute and are ignored" : "home directory set",
    detail: ignored.length ? ignored : undefined,
    fix: ignored.length ? "give these variables absolute paths (or unset them)" : undefined,
  }];
  const problems: string[] = [];
  for (const dir of [state!, queue!]) {
    const reason = await unwritableReason(dir, { removeCreated: true });
    if (reason) problems.push(reason);
  }
  checks.push(
    problems.length
      ? {
        id: "state-dirs",
        status: "fail",
        summary:
          "the hook state or the pending queue cannot be written: recall still works, but nothing is " +
          "captured (the journal keeps every turn until this is fixed)",
        detail: problems,
        fix:
          `make ${state} and ${queue} directories you can write (\`mkdir -p DIR && chmod 700 DIR\`; move ` +
          "a file that is in the way), or set OPENVIKING_HOOK_STATE_DIR / OPENVIKING_PENDING_DIR to ones",
      }
      : { id: "state-dirs", status: "ok", summary: `hook state ${state} and queue ${queue} are writable` },
  );
  return checks;
}
