/** The gates every hook passes first: enabled, and the bypass patterns on session id and cwd. */

/** A bypass glob as an anchored regex: `**` any text, `*` any text without `/`, every other character itself. */
export function globToRegExp(glob: string): RegExp {
  const literal = (s: string) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^${glob.split("**").map((p) => p.split("*").map(literal).join("[^/]*")).join(".*")}$`);
}

/** Why a hook run is skipped, or "" when it goes ahead. */
export function gateReason(
  settings: { enabled: boolean; bypassSession: boolean; bypassSessionPatterns: string[] },
  sessionId: string,
  cwd: string,
): string {
  if (!settings.enabled) return "disabled";
  if (settings.bypassSession) return "bypass-session";
  const hit = settings.bypassSessionPatterns.find((pattern) => {
    const re = globToRegExp(pattern);
    return (sessionId && re.test(sessionId)) || (cwd && re.test(cwd));
  });
  return hit === undefined ? "" : `bypass-pattern ${hit}`;
}
