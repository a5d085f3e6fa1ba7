import { BlockList, isIP } from 'node:net';

/**
 * Option `trustProxy`, as Express's `trust proxy`: `false` (the socket's address), `true` (every
 * hop trusted: the left-most X-Forwarded-For address, right only behind a proxy that overwrites
 * the header), a number of trusted hops, or a list of trusted proxy addresses, CIDRs and the names
 * below.
 */
export type TrustProxy = boolean | number | readonly string[];

/** Named ranges, with Express's names. */
const NAMED_RANGES: Record<string, readonly string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

const family = (address: string): 'ipv4' | 'ipv6' | undefined => {
  const version = isIP(address);
  return version === 4 ? 'ipv4' : version === 6 ? 'ipv6' : undefined;
};

/** Adds one address or CIDR to `list`; answers false when it is neither. */
function addEntry(list: BlockList, entry: string): boolean {
  const slash = entry.indexOf('/');
  const address = slash < 0 ? entry : entry.slice(0, slash);
  const kind = family(address);
  if (!kind) return false;
  if (slash < 0) {
    list.addAddress(address, kind);
    return true;
  }
  const prefix = entry.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > (kind === 'ipv4' ? 32 : 128)) return false;
  list.addSubnet(address, Number(prefix), kind);
  return true;
}

/** What is wrong with a `trustProxy` list, or undefined. */
export function trustListProblem(entries: readonly string[]): string | undefined {
  const list = new BlockList();
  for (const raw of entries) {
    const entry = raw.trim();
    const named = NAMED_RANGES[entry];
    if (named) continue;
    if (!addEntry(list, entry)) {
      return `"${raw}" is not an IP address, a CIDR or one of ${Object.keys(NAMED_RANGES).join(', ')}.`;
    }
  }
  return undefined;
}

/** Whether the hop at `index` (0: the socket's peer) with `address` is a proxy we trust. */
type Trusted = (address: string, index: number) => boolean;

function trustedBy(option: TrustProxy): Trusted {
  if (option === true) return () => true;
  if (option === false) return () => false;
  if (typeof option === 'number') return (_address, index) => index < option;
  const list = new BlockList();
  for (const raw of option) {
    const entry = raw.trim();
    for (const part of NAMED_RANGES[entry] ?? [entry]) addEntry(list, part);
  }
  return (address) => {
    const kind = family(address);
    return kind !== undefined && list.check(address, kind);
  };
}

/**
 * Whether the socket's peer is a proxy the option trusts: only then are the headers it adds about
 * the request (X-Forwarded-For, X-Request-Id: kernel/trace.ts) believed.
 */
export function trustedPeer(option: TrustProxy): (socketAddress: string | undefined) => boolean {
  if (option === false || option === 0) return () => false;
  const trusted = trustedBy(option);
  return (socketAddress) => socketAddress !== undefined && trusted(socketAddress, 0);
}

/**
 * The one rule for the client's address (REST requests, and so cloud code's `request.ip` and the
 * rate limits' `ip` key). The chain is the socket's address, then X-Forwarded-For's addresses from
 * right to left (several headers are one list, in order); the client is the first address in it
 * that is not a trusted proxy, or the last one there is when all of them are trusted.
 */
export function clientAddressOf(
  option: TrustProxy,
): (socketAddress: string | undefined, forwardedFor: string | string[] | undefined) => string | undefined {
  if (option === false || option === 0) return (socketAddress) => socketAddress;
  const trusted = trustedBy(option);
  return (socketAddress, forwardedFor) => {
    if (socketAddress === undefined || forwardedFor === undefined) return socketAddress;
    if (!trusted(socketAddress, 0)) return socketAddress;
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
    let client = socketAddress;
    let index = 0;
    for (let i = hops.length - 1; i >= 0; i--) {
      const address = hops[i]!.trim();
      if (address === '') continue;
      client = address;
      index++;
      if (!trusted(address, index)) return client;
    }
    return client;
  };
}
