// The node upstream's proxier unit tests (pkg/proxy/{iptables,nftables}/proxier_test.go) build
// their fake proxier on: its IPs and the addresses of its interfaces. The transcribed goldens
// and packet flows of every mode reproduce it from here.

export const UPSTREAM_NODE_IPV4 = "192.168.0.2";
export const UPSTREAM_NODE_IPV6 = "2001:db8::1";

/** lo and eth0 of upstream's fake node, as `ip -o addr` would list them. */
export const UPSTREAM_NODE_ADDRESSES: readonly string[] = [
  "127.0.0.1/8",
  "::1/128",
  "192.168.0.2/24",
  "192.168.1.2/24",
  "192.168.99.11/24",
  "2001:db8::1/64",
  "2001:db8:1::2/64",
];
