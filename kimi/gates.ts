/** The gates every hook passes first: enabled, and the bypass patterns on session id and cwd. */

/**
 * Whether all of `text` matches bypass glob `glob`: a run of two or more `*` any text, one `*` any text without
 * `/`, every other character itself. The glob's positions are followed as a set, one step per character of
 * `text`: no backtracking, so a workspace's glob like `********x` costs glob × text steps at most.
 */
export function globMatches(glob: string, text: string): boolean {
  const tokens = glob.match(/\*+|[^*]/g) ?? [];
  const star = (i: number) => tokens[i]?.[0] === "*";
  const close = (at: Set<number>) => {
    for (const i of at) if (star(i)) at.add(i + 1); // a star may match nothing
    return at;
  };
  let at = close(new Set([0]));
  for (let k = 0; k < text.length && at.size; k++) {
    const next = new Set<number>();
    for (const i of at) {
      if (star(i) && (tokens[i].length > 1 || text[k] !== "/")) next.add(i);
      else if (tokens[i] === text[k]) next.add(i + 1);
    }
    at = close(next);
  }
  return at.has(tokens.length);
}

/** Why a hook run is skipped, or "" when it goes ahead. */
type Gates = { enabled: boolean; bypassSession: boolean; bypassSessionPatterns: string[] };
export function gateReason(settings: Gates, sessionId: string, cwd: string): string {
  if (!settings.enabled) return "disabled";
  if (settings.bypassSession) return "bypass-session";
  const hit = settings.bypassSessionPatterns.find((pattern) =>
    (sessionId && globMatches(pattern, sessionId)) || (cwd && globMatches(pattern, cwd))
  );
  return hit === undefined ? "" : `bypass-pattern ${hit}`;
}
