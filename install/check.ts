/** What every doctor check reports: a verdict, a one-line summary, details, and the fix when it is not ok. */

/** A check's verdict. */
export type CheckStatus = "ok" | "info" | "warn" | "fail";

/** One check. */
export interface Check {
  id: string;
  status: CheckStatus;
  summary: string;
  detail?: string[];
  fix?: string;
}
