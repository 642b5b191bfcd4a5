/** A small unified diff of two texts (line-based LCS), for `install --dry-run`. */

/** One line of an edit script. */
type Op = { kind: " " | "-" | "+"; line: string };

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  else lines[lines.length - 1] += "\n\\ No newline at end of file";
  return lines.map((l) => l.replace(/\r$/, "␍"));
}

function editScript(a: string[], b: string[]): Op[] {
  const n = a.length;
  const m = b.length;
  if (n * m > 4_000_000) {
    return [
      ...a.map((line) => ({ kind: "-" as const, line })),
      ...b.map((line) => ({ kind: "+" as const, line })),
    ];
  }
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      ops.push({ kind: " ", line: a[i] });
      i++;
      j++;
    } else if (i < n && (j >= m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      // On a tie the removed line comes first, as in `diff -u`.
      ops.push({ kind: "-", line: a[i++] });
    } else {
      ops.push({ kind: "+", line: b[j++] });
    }
  }
  return ops;
}

/** A unified diff (3 lines of context) from `before` to `after`; "" when they are equal. */
export function unifiedDiff(path: string, before: string | undefined, after: string | undefined): string {
  if (before === after) return "";
  const ops = editScript(splitLines(before ?? ""), splitLines(after ?? ""));
  const out = [
    `--- ${before === undefined ? "/dev/null" : `${path} (now)`}`,
    `+++ ${after === undefined ? "/dev/null" : `${path} (after)`}`,
  ];
  const context = 3;
  let k = 0;
  while (k < ops.length) {
    if (ops[k].kind === " ") {
      k++;
      continue;
    }
    let start = Math.max(0, k - context);
    let end = k;
    while (end < ops.length) {
      if (ops[end].kind !== " ") {
        end++;
        continue;
      }
      let run = end;
      while (run < ops.length && ops[run].kind === " ") run++;
      if (run === ops.length || run - end > 2 * context) {
        end = Math.min(run, end + context);
        break;
      }
      end = run;
    }
    let aLine = 1;
    let bLine = 1;
    for (let x = 0; x < start; x++) {
      if (ops[x].kind !== "+") aLine++;
      if (ops[x].kind !== "-") bLine++;
    }
    const hunk = ops.slice(start, end);
    const aCount = hunk.filter((o) => o.kind !== "+").length;
    const bCount = hunk.filter((o) => o.kind !== "-").length;
    out.push(`@@ -${aCount ? aLine : aLine - 1},${aCount} +${bCount ? bLine : bLine - 1},${bCount} @@`);
    for (const o of hunk) out.push(`${o.kind}${o.line}`);
    k = end;
    start = end;
  }
  return `${out.join("\n")}\n`;
}
