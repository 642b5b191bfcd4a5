import { assertThrows } from "./assert.ts";
import { assertLinear, mb } from "./linear.ts";

/** Busy work of `n` steps (a result the optimizer cannot drop). */
function work(n: number): number {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x + Math.imul(i, 0x9e3779b1)) | 0;
  return x;
}

Deno.test("assertLinear: with the time bound out of the way, a linear rule passes and a quadratic one fails", () => {
  const text = mb("x", 1 << 17);
  // Timed on 4 times the text: a quarter of ~6 ms is within the timer's and the scheduler's grain (a linear
  // run measured 23 ms against a quarter's 3 ms at load 15).
  assertLinear("linear", (t) => work(t.length * 200), { text: text.repeat(4) }, 0);
  assertThrows(
    () => assertLinear("quadratic", (t) => work((t.length >> 3) ** 2 / 2), { text }, 0),
    Error,
    "quadratic, text",
  );
});
