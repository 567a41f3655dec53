import { BlockList, isIP } from "node:net";

/**
 * Addresses a sandboxed process may reach only through a rule that names the host exactly: the
 * machine itself, the local networks, link-local (cloud metadata at 169.254.169.254 included),
 * unspecified, multicast and reserved ranges. A name that resolves into them (a DNS entry pointed
 * at 127.0.0.1) is refused the same way, so a wildcard rule cannot be used to reach inside.
 */
const INTERNAL = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata
  ["172.16.0.0", 12],
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const) {
  INTERNAL.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 96], // unspecified, loopback, and the old IPv4-compatible form ::a.b.c.d
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated, still routed on some networks)
  ["ff00::", 8], // multicast
  ["64:ff9b::", 96], // NAT64: may lead to any IPv4 address
  ["2002::", 16], // 6to4: embeds an IPv4 address
] as const) {
  INTERNAL.addSubnet(network, prefix, "ipv6");
}

/**
 * Whether an IP address is loopback, private, link-local, unspecified, multicast or reserved.
 * IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`) are checked as the IPv4 address they carry.
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return INTERNAL.check(address, "ipv4");
  if (family === 6) return INTERNAL.check(address, "ipv6");
  return true;
}
