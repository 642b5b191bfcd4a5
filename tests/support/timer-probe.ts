/** Runs one hook in-process with the global timers replaced by recorders, then prints what used them. */

const calls: string[] = [];
for (const name of ["setTimeout", "setInterval", "clearTimeout", "clearInterval"]) {
  Object.defineProperty(globalThis, name, {
    value: () => {
      calls.push(name);
      return 0;
    },
    configurable: true,
    writable: true,
  });
}
const { runHook } = await import("../../memory/dispatch.ts");
const stdin = new Uint8Array(await new Response(Deno.stdin.readable).arrayBuffer());
const stdout = await runHook(Deno.args[0], stdin);
console.log(JSON.stringify({ calls, stdout }));
