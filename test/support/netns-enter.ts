// Runs a synchronous function with this thread inside a named network namespace and returns
// to the original one before anything else can run: a netlink socket opened there stays in that
// namespace. Only for sockets; never spawn processes inside `fn`.

import { dlopen, FFIType, read } from "bun:ffi";
import { closeSync, openSync } from "node:fs";
import {
  NETLINK_GENERIC,
  NETLINK_NETFILTER,
  type NetlinkSocket,
  netlinkSocketOpener,
} from "../../src/host/netlink-socket/socket.ts";

const CLONE_NEWNET = 0x40000000;

const libc = dlopen("libc.so.6", {
  setns: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  __errno_location: { args: [], returns: FFIType.ptr },
}).symbols;

function setns(fd: number, what: string): void {
  if (libc.setns(fd, CLONE_NEWNET) === 0) return;
  const at = libc.__errno_location();
  throw new Error(`setns(${what}): errno ${at ? read.i32(at, 0) : "?"}`);
}

export function inNetns<T>(name: string, fn: () => T): T {
  const home = openSync("/proc/thread-self/ns/net", "r");
  const target = openSync(`/run/netns/${name}`, "r");
  try {
    setns(target, name);
    try {
      return fn();
    } finally {
      setns(home, "the original namespace");
    }
  } finally {
    closeSync(target);
    closeSync(home);
  }
}

/** A NETLINK_NETFILTER socket opened inside the named namespace (throws when none can be had). */
export function netfilterSocketIn(name: string): Promise<NetlinkSocket> {
  return netlinkSocketIn(name, NETLINK_NETFILTER);
}

/** A NETLINK_GENERIC socket (IPVS) opened inside the named namespace. */
export function genericSocketIn(name: string): Promise<NetlinkSocket> {
  return netlinkSocketIn(name, NETLINK_GENERIC);
}

async function netlinkSocketIn(
  name: string,
  protocol: typeof NETLINK_NETFILTER | typeof NETLINK_GENERIC,
): Promise<NetlinkSocket> {
  const opener = await netlinkSocketOpener(protocol);
  if (typeof opener === "string") throw new Error(`netlink socket: ${opener}`);
  const socket = inNetns(name, opener);
  if (typeof socket === "string") throw new Error(`netlink socket in ${name}: ${socket}`);
  return socket;
}
