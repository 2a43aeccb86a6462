/**
 * IP allowlists of API keys (docs/decisions.md "Key lifecycle"): parsing an operator's CIDR list
 * into canonical entries, and matching a caller's address against them with Node's `net.BlockList`.
 * No package: `node:net` validates addresses (`isIP`), normalises them (`SocketAddress`) and
 * matches subnets, IPv4-mapped IPv6 included.
 */
import { BlockList, SocketAddress, isIP } from 'node:net';

export type IpFamily = 'ipv4' | 'ipv6';

/** Most entries one key may hold: the list travels on the key record, read on every request. */
export const MAX_ALLOWED_IPS = 50;

export class InvalidCidrError extends Error {
  override name = 'InvalidCidrError';
}

const familyOf = (address: string): IpFamily | undefined => {
  // A zone id (`fe80::1%eth0`) names an interface of the caller's machine, not an address.
  if (address.includes('%')) return undefined;
  const version = isIP(address);
  return version === 4 ? 'ipv4' : version === 6 ? 'ipv6' : undefined;
};

/** The 4 or 16 bytes of a valid address. */
const toBytes = (address: string, family: IpFamily): number[] => {
  if (family === 'ipv4') return address.split('.').map(Number);
  const [head = '', tail] = address.split('::') as [string, string | undefined];
  const groups = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [Number.parseInt(group, 16)];
          const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const words = [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
  return words.flatMap((word) => [word >> 8, word & 0xff]);
};

const fromBytes = (bytes: number[], family: IpFamily): string => {
  if (family === 'ipv4') return bytes.join('.');
  const words = Array.from({ length: 8 }, (_, i) =>
    (((bytes[2 * i] ?? 0) << 8) | (bytes[2 * i + 1] ?? 0)).toString(16),
  );
  // SocketAddress writes the shortest form (RFC 5952): `2001:db8::`.
  return new SocketAddress({ address: words.join(':'), family }).address;
};

/** The network address: host bits cleared, so `10.1.2.3/8` is stored as `10.0.0.0/8`. */
const networkOf = (address: string, family: IpFamily, prefix: number): string => {
  const bytes = toBytes(address, family).map((byte, index) => {
    const bits = Math.min(8, Math.max(0, prefix - index * 8));
    return byte & ((0xff << (8 - bits)) & 0xff);
  });
  return fromBytes(bytes, family);
};

/**
 * One allowlist entry as an operator typed it → its canonical CIDR (`203.0.113.0/24`,
 * `2001:db8::/32`); a bare address is one host (`/32`, `/128`).
 * @throws InvalidCidrError for anything else: bad octets, prefixes out of range, host names, zone ids
 */
export const parseCidr = (entry: string): string => {
  const text = entry.trim();
  const slash = text.indexOf('/');
  const address = slash === -1 ? text : text.slice(0, slash);
  const prefixText = slash === -1 ? undefined : text.slice(slash + 1);
  const family = familyOf(address);
  if (!family) throw new InvalidCidrError(`"${entry}" is not an IPv4 or IPv6 address or CIDR block`);
  const max = family === 'ipv4' ? 32 : 128;
  if (prefixText !== undefined && !/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) {
    throw new InvalidCidrError(`"${entry}": the prefix length after "/" must be a whole number from 0 to ${max}`);
  }
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) throw new InvalidCidrError(`"${entry}": an ${family} prefix length is at most ${max}`);
  return `${networkOf(address, family, prefix)}/${prefix}`;
};

/**
 * A comma-separated list (`--allow-ip 203.0.113.0/24,2001:db8::1`) → canonical entries, without
 * repeats. Empty entries are refused rather than skipped: `a,,b` is more likely a typo than intent.
 */
export const parseAllowlist = (list: string): string[] => {
  const entries = list.split(',');
  if (entries.some((entry) => entry.trim() === '')) {
    throw new InvalidCidrError('the IP allowlist has an empty entry (two commas, or one at an end)');
  }
  return canonicalAllowlist(entries);
};

/** Entries → canonical CIDR entries without repeats, at most MAX_ALLOWED_IPS of them. */
export const canonicalAllowlist = (entries: readonly string[]): string[] => {
  const canonical = [...new Set(entries.map(parseCidr))];
  if (canonical.length > MAX_ALLOWED_IPS) {
    throw new InvalidCidrError(`an IP allowlist holds at most ${MAX_ALLOWED_IPS} entries`);
  }
  return canonical;
};

/**
 * The caller's address as the list is matched: IPv4-mapped IPv6 (`::ffff:10.0.0.1`, also written
 * `::ffff:a00:1`) is the IPv4 address it carries, so it matches IPv4 entries. Undefined when the
 * value is not an address at all.
 */
export const normaliseSourceIp = (sourceIp: string): { address: string; family: IpFamily } | undefined => {
  const family = familyOf(sourceIp);
  if (!family) return undefined;
  if (family === 'ipv4') return { address: sourceIp, family };
  const address = new SocketAddress({ address: sourceIp, family }).address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped?.[1] ? { address: mapped[1], family: 'ipv4' } : { address, family };
};

/**
 * Whether an address is on a key's list of canonical CIDR entries. Fails closed: an address that
 * is not one, or an entry that does not parse (a hand-edited record), matches nothing.
 */
export const isAllowedIp = (sourceIp: string, allowlist: readonly string[]): boolean => {
  const source = normaliseSourceIp(sourceIp);
  if (!source) return false;
  const blocks = new BlockList();
  for (const entry of allowlist) {
    const [address = '', prefix] = entry.split('/');
    const family = familyOf(address);
    if (!family || prefix === undefined || !/^\d{1,3}$/.test(prefix)) continue;
    try {
      blocks.addSubnet(address, Number(prefix), family);
    } catch {
      // out-of-range prefix in a stored entry: matches nothing
    }
  }
  return blocks.check(source.address, source.family);
};
