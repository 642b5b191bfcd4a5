/** A server that takes every connection and never answers: what a hung OpenViking looks like to a client. */

/** A running hung server. */
interface HungServer {
  url: string;
  port: number;
  /** The request line of each connection it took ("POST /api/v1/search/search HTTP/1.1"), as they came. */
  requests: string[];
  /** Stops listening and drops every connection it holds; resolves once its port can be bound again. */
  close(): Promise<void>;
}

/** Starts a server on 127.0.0.1 (`port`, else a free one) that reads each request and never answers. */
export function startHungServer(port = 0): HungServer {
  const listener = Deno.listen({ hostname: "127.0.0.1", port });
  const held: Deno.Conn[] = [];
  const requests: string[] = [];
  const hold = async (conn: Deno.Conn) => {
    held.push(conn);
    const buf = new Uint8Array(4096);
    const n = await conn.read(buf).catch(() => null);
    if (n) requests.push(new TextDecoder().decode(buf.subarray(0, n)).split("\r\n")[0]);
  };
  (async () => {
    for await (const conn of listener) hold(conn);
  })().catch(() => {});
  const bound = (listener.addr as Deno.NetAddr).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    requests,
    async close() {
      listener.close();
      for (const conn of held) {
        try {
          conn.close();
        } catch { /* ignored */ }
      }
      for (let tries = 0; tries < 200; tries++) {
        try {
          Deno.listen({ hostname: "127.0.0.1", port: bound }).close();
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 10));
        }
      }
    },
  };
}
