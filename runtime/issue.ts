/**
 * What a zod/mini check found wrong, in a few words. zod/mini loads no locale (its messages all read
 * "Invalid input"), so warnings and error replies describe the issue themselves.
 */

import type * as z from "zod/mini";

/** The first issue of a failed parse in words ("expected number", "must be at most 100", …). */
export function issueText(issue: z.core.$ZodIssue | undefined): string {
  if (!issue) return "is invalid";
  switch (issue.code) {
    case "invalid_type":
      return `expected ${issue.expected}`;
    case "too_small":
      return issue.origin === "number" || issue.origin === "int"
        ? `must be at least ${issue.minimum}`
        : `needs at least ${issue.minimum} ${issue.origin === "string" ? "characters" : "items"}`;
    case "too_big":
      return issue.origin === "number" || issue.origin === "int"
        ? `must be at most ${issue.maximum}`
        : `takes at most ${issue.maximum} ${issue.origin === "string" ? "characters" : "items"}`;
    case "invalid_value":
      return `must be ${issue.values.map((v) => JSON.stringify(v)).join(" or ")}`;
    case "invalid_union":
      return "has none of the accepted types";
    default:
      return issue.message;
  }
}
