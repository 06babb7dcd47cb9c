/**
 * Which `Host` (and `Origin`) headers name one of our HTTP servers, against DNS rebinding: a page on evil.example
 * whose name its owner points at 127.0.0.1 reaches a loopback server from the browser, same-origin, but its requests
 * carry `Host: evil.example`. Serving only the Host values that name the address we listen on (and, on loopback,
 * the loopback names) stops it. Shared by the viewer, the MCP HTTP server and the codec server. Pure.
 */

/** The names of the loopback interface a client may write in Host (IPv6 in brackets). */
export const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]'] as const;

/** An address as a socket reports it, without the IPv4-mapped prefix (`::ffff:127.0.0.1` → `127.0.0.1`). */
function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice('::ffff:'.length) : address;
}

/** Whether `address` (an IP or `localhost`, as listened on or as a socket's local address) is loopback. */
export function isLoopback(address: string): boolean {
  const a = plainAddress(address);
  return a === 'localhost' || a === '::1' || a === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(a);
}

/**
 * The Host header values that name a server listening on `address`:`port`: that address (IPv6 in brackets), and
 * every loopback name when the address is loopback. `extra` are served as well, exactly as written (the name a
 * proxy in front uses, e.g. `codec.internal:8888`).
 */
export function servedHosts(address: string, port: number, extra: readonly string[] = []): string[] {
  const a = plainAddress(address);
  const own = `${a.includes(':') && !a.startsWith('[') ? `[${a}]` : a}:${port}`;
  const loopback = isLoopback(a) ? LOOPBACK_HOSTS.map((name) => `${name}:${port}`) : [];
  return [...new Set([own, ...loopback, ...extra])];
}

/** Whether an Origin header is `http://` one of `hosts` (the page's own origin). */
export function isServedOrigin(origin: string, hosts: readonly string[]): boolean {
  return hosts.some((host) => origin === `http://${host}`);
}
