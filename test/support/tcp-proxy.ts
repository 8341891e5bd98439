import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** host:port to connect to instead of the target. */
  address: string;
  /**
   * A network partition: every open connection is cut and new ones are refused, until
   * `heal`. Only what goes through this proxy is cut (a worker's Temporal connection, say),
   * so the worker keeps reaching Postgres and the upstream.
   */
  partition(): void;
  heal(): void;
  /**
   * A slow server as the client sees it: what the target answers is held here (requests still
   * pass through and are processed), until `releaseResponses` delivers it all, in order. A
   * client's deadline can so pass while the server did the work.
   */
  holdResponses(): void;
  releaseResponses(): void;
  close(): Promise<void>;
}

/** A plain TCP forwarder to `target` (host:port); gRPC over HTTP/2 passes through unchanged. */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<Socket>();
  let cut = false;
  let holding = false;
  let held: Array<() => void> = [];
  const server: Server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host, port });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (holding) held.push(() => client.write(chunk));
      else client.write(chunk);
    });
    upstream.on('end', () => {
      if (holding) held.push(() => client.end());
      else client.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const localPort = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    address: `127.0.0.1:${localPort}`,
    partition() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    heal() {
      cut = false;
    },
    holdResponses() {
      holding = true;
    },
    releaseResponses() {
      holding = false;
      const pending = held;
      held = [];
      for (const deliver of pending) deliver();
    },
    async close() {
      cut = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
