/** Test helper process: rewrites one state file forever with growing content, until killed. */
import { emptyState, writeState } from "../../memory/state.ts";

const [file] = Deno.args;
for (let i = 0;; i++) {
  const state = emptyState();
  state.capturedKeys = Array.from({ length: 900 }, (_, k) => `${i}:${k}:${"x".repeat(200)}`);
  state.capturedSinceCommit = i;
  await writeState(file, state);
}
