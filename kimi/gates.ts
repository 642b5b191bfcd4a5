/** The gates every hook passes first: enabled, and the bypass patterns on session id and cwd. */

/** Turns a bypass glob into an anchored regex: `**` any text, `*` any text without `/`. */
export function globToRegExp(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*" && glob[i + 1] === "*") {
      out += ".*";
      i++;
    } else if (c === "*") out += "[^/]*";
    else out += c.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

/** Why a hook run is skipped, or "" when it goes ahead. */
export function gateReason(
  settings: { enabled: boolean; bypassSession: boolean; bypassSessionPatterns: string[] },
  sessionId: string,
  cwd: string,
): string {
  if (!settings.enabled) return "disabled";
  if (settings.bypassSession) return "bypass-session";
  for (const pattern of settings.bypassSessionPatterns) {
    const re = globToRegExp(pattern);
    if ((sessionId && re.test(sessionId)) || (cwd && re.test(cwd))) return `bypass-pattern ${pattern}`;
  }
  return "";
}
