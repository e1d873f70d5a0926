import { lookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent } from 'undici';

/**
 * Outbound calls to addresses a caller chose (a registered site's URL) must not reach the
 * gateway's own network: loopback, private, link-local (cloud metadata at 169.254.169.254),
 * carrier-grade NAT, multicast and reserved ranges. The check runs on the addresses a name
 * resolves to, at connection time, so a name that resolves (or re-resolves) to an internal
 * address is refused too.
 */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 96], // unspecified, and IPv4-compatible (deprecated) addresses
  ['::1', 128],
  ['2002::', 16], // 6to4: embeds any IPv4 address, private ones included
  ['2001::', 32], // Teredo
  ['fec0::', 10], // site-local (deprecated)
  ['64:ff9b:1::', 48],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

// IPv4-mapped IPv6 (::ffff:a.b.c.d): whatever they map to, a public site has a plain address.
// (Not a BlockList rule: BlockList applies IPv6 rules to IPv4 addresses as if mapped.)
const IPV4_MAPPED = /^::ffff:/i;

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 6 && IPV4_MAPPED.test(address)) return false;
  return !NON_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** A URL's host when it is an IP literal (brackets of IPv6 removed), else undefined. */
export function ipLiteralHost(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) ? host : undefined;
}

/** Whether a URL names a host that cannot be public: a non-public IP literal or a `localhost` name. */
export function namesNonPublicHost(url: URL): boolean {
  const literal = ipLiteralHost(url);
  if (literal) return !isPublicAddress(literal);
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  return host === 'localhost' || host.endsWith('.localhost');
}

export class NonPublicAddressError extends Error {
  readonly code = 'ENOTPUBLIC';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** `net.connect`'s lookup, refusing names that resolve to any non-public address. */
function publicOnlyLookup(hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void {
  lookup(hostname, { family: options.family ?? 0, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    if (addresses.length === 0 || addresses.some((entry) => !isPublicAddress(entry.address))) {
      return callback(new NonPublicAddressError(`${hostname} resolves to a non-public address`), []);
    }
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

let publicOnly: Agent | undefined;
/** An undici dispatcher whose connections reach public addresses only. */
export function publicOnlyDispatcher(): Agent {
  publicOnly ??= new Agent({ connect: { lookup: publicOnlyLookup as never } });
  return publicOnly;
}
