/** What recall takes and gives: the settings it reads (a subset of the config), one request, its result. */

import type { Budget, OvFailure } from "../openviking/client.ts";
import type { Memory } from "./recalled.ts";

/** Settings recall needs (a subset of the config). */
export interface RecallSettings {
  recallLimit: number;
  /** True when the user set the limit (only then are quotas sent). */
  recallLimitConfigured: boolean;
  recallTokenBudget: number;
  recallMaxContentChars: number;
  scoreThreshold: number;
  recallPreferAbstract: boolean;
  recallPeerScope: "all" | "actor";
  recallDedupTurns: number;
  /** True when the user set the dedupe window. */
  recallDedupTurnsConfigured?: boolean;
  /** The output format: the digest shows only some of what the server returns. */
  recallFormat?: "digest" | "full";
  recallMaxTokens?: number;
  recallQueryExpansion?: "off" | "auto";
}

/** One recall request's context. */
export interface RecallRequest {
  query: string;
  /** OpenViking session id (`kc-…`), for server-side expansion and cross-turn dedupe. */
  sessionId?: string;
  /** URIs the session already received (sent as `exclude_uris`, ≤ 200). */
  excludeUris?: string[];
  budget: Budget;
  /** Directory of the shared legacy memo (`context-face.json`); "" = none (no home): nothing remembered. */
  stateDir: string;
  now?: number;
}

/** What recall produced. */
export interface RecallResult {
  /** Which stage answered: "context", "recall", "find", or "none". */
  source: "context" | "recall" | "find" | "none";
  /** The memories it listed, in its order (find: ranked here). */
  memories: Memory[];
  /**
   * The text the server assembled (its `digest`, else its `rendered` text): the full format prints it as it
   * is when none of the memories is left out.
   */
  assembled?: string;
  /**
   * Why no stage answered, when none did (source "none"): the first failure that was not the server lacking
   * that stage, as it came. Undefined when a stage answered, even with nothing.
   */
  failure?: OvFailure;
}
