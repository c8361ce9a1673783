// A transaction's operations as one nf_tables netlink batch, message for message what nft 1.0.6
// sends for the same text: chains added, flushed and deleted; rules of the shapes statements.ts
// reads; elements of sets and verdict maps whose types are known; address sets (session
// affinity) made; sets and maps flushed or deleted. Tables, base chains, maps and other sets are
// left to nft: encodeBatch answers undefined for a transaction holding anything it does not
// write, and nothing of it is sent. Pure.

import type { IPFamily } from "../../../util/net/family.ts";
import { nftCommentText } from "../script-text.ts";
import type { NftElement, NftOperation, NftSet } from "../types.ts";
import {
  type Expr,
  elementKey,
  elementVerdict,
  type FieldType,
  fieldTypes,
  ruleExpressions,
} from "./statements.ts";
import {
  MessageWriter,
  NLM_F_ACK,
  NLM_F_APPEND,
  NLM_F_CREATE,
  NLM_F_REQUEST,
  nftMessageType,
} from "./wire.ts";

const MSG = {
  NEWCHAIN: 3,
  DELCHAIN: 5,
  NEWRULE: 6,
  DELRULE: 8,
  NEWSET: 9,
  DELSET: 11,
  NEWSETELEM: 12,
  DELSETELEM: 14,
};
const NFPROTO = { IPv4: 2, IPv6: 10 } as const;
const LIST_ELEM = 1;
const CHAIN = { TABLE: 1, NAME: 3, USERDATA: 12 };
const RULE = { TABLE: 1, CHAIN: 2, EXPRESSIONS: 4, USERDATA: 7 };
const SET = { TABLE: 1, NAME: 2, FLAGS: 3, KEY_TYPE: 4, KEY_LEN: 5, ID: 10, TIMEOUT: 11, USERDATA: 13 };
/** Set flags nft writes for "timeout" and "dynamic". */
const SET_FLAGS: Readonly<Record<string, number>> = { timeout: 0x10, dynamic: 0x20 };
/** nft's datatype numbers and lengths of the address sets a partial sync makes (session affinity). */
const ADDRESS_SET_TYPES: Readonly<Record<string, { type: number; len: number }>> = {
  ipv4_addr: { type: 7, len: 4 },
  ipv6_addr: { type: 8, len: 16 },
};
/** The set userdata nft 1.0.6 writes for an address set: the key's byte order (type 0), big-endian (2). */
const ADDRESS_SET_USERDATA = Uint8Array.of(0, 4, 2, 0, 0, 0);
const ELEMS = { TABLE: 1, SET: 2, ELEMENTS: 3 };
const ELEM = { KEY: 1, DATA: 2, USERDATA: 6 };
const DATA = { VALUE: 1, VERDICT: 2 };
const VERDICT_ATTR = { CODE: 1, CHAIN: 2 };
const EXPR = { NAME: 1, DATA: 2 };
/** The type-0 TLV of rule, element and chain userdata: the comment, NUL-terminated. */
const UDATA_COMMENT = 0;

const utf8 = new TextEncoder();

/** The types of the sets and maps a transaction's elements go into, by name. */
export type ContainerTypes = (name: string) => string | undefined;

/** A batch ready to send: its bytes, and which operation each message's sequence number carries. */
export interface EncodedBatch {
  readonly bytes: Uint8Array;
  /** Sequence number of each message -> index of the operation it came from (BEGIN: -1). */
  readonly operationOf: ReadonlyMap<number, number>;
  readonly messages: number;
}

function comment(text: string): Uint8Array {
  const bytes = utf8.encode(nftCommentText(text));
  const out = new Uint8Array(2 + bytes.length + 1);
  out[0] = UDATA_COMMENT;
  out[1] = bytes.length + 1;
  out.set(bytes, 2);
  return out;
}

/** Each expression's attributes (NFTA_<EXPR>_*), by the names nf_tables.h gives them. */
const A = {
  payload: { DREG: 1, BASE: 2, OFFSET: 3, LEN: 4 },
  meta: { DREG: 1, KEY: 2, SREG: 3 },
  cmp: { SREG: 1, OP: 2, DATA: 3 },
  bitwise: { SREG: 1, DREG: 2, LEN: 3, MASK: 4, XOR: 5 },
  immediate: { DREG: 1, DATA: 2 },
  numgen: { DREG: 1, MODULUS: 2, TYPE: 3, OFFSET: 4 },
  fib: { DREG: 1, RESULT: 2, FLAGS: 3 },
  lookup: { SET: 1, SREG: 2, FLAGS: 5 },
  dynset: { SET_NAME: 1, OP: 3, SREG_KEY: 4 },
  nat: { TYPE: 1, FAMILY: 2, REG_ADDR_MIN: 3, REG_PROTO_MIN: 5, FLAGS: 7 },
} as const;
/** Every load and compare uses register 1 (NFT_REG_1); a DNAT's port is in register 2. */
const REG = { VERDICT: 0, R1: 1, R2: 2 };
const CMP_EQ = 0;
const CMP_NEQ = 1;
const NUMGEN_RANDOM = 1;
const FIB_RESULT_ADDRTYPE = 3;
const LOOKUP_INVERTED = 1;
const DYNSET_UPDATE = 1;
const NAT_DNAT = 1;
/** NF_NAT_RANGE_PROTO_SPECIFIED: the DNAT names a port (nft sends only this flag). */
const NAT_PROTO_SPECIFIED = 2;

function writeExpr(w: MessageWriter, e: Expr): void {
  const data = (type: number, bytes: Uint8Array) => w.nest(type, (w) => w.attr(DATA.VALUE, bytes));
  const named = (name: string, body: () => void) =>
    w.nest(LIST_ELEM, (w) => {
      w.str(EXPR.NAME, name);
      w.nest(EXPR.DATA, body);
    });
  switch (e.kind) {
    case "payload": {
      const a = A.payload;
      return void named("payload", () =>
        w.be32(a.DREG, REG.R1).be32(a.BASE, e.base).be32(a.OFFSET, e.offset).be32(a.LEN, e.len),
      );
    }
    case "meta":
      // The key first, as nft orders them.
      return void named("meta", () => w.be32(A.meta.KEY, e.key).be32(A.meta.DREG, REG.R1));
    case "meta-set":
      return void named("meta", () => w.be32(A.meta.KEY, e.key).be32(A.meta.SREG, REG.R1));
    case "cmp":
      return void named("cmp", () => {
        w.be32(A.cmp.SREG, REG.R1).be32(A.cmp.OP, e.neq ? CMP_NEQ : CMP_EQ);
        data(A.cmp.DATA, e.data);
      });
    case "bitwise": {
      const a = A.bitwise;
      return void named("bitwise", () => {
        w.be32(a.SREG, REG.R1).be32(a.DREG, REG.R1).be32(a.LEN, e.mask.length);
        data(a.MASK, e.mask);
        data(a.XOR, e.xor);
      });
    }
    case "immediate":
      return void named("immediate", () => {
        w.be32(A.immediate.DREG, e.reg);
        data(A.immediate.DATA, e.data);
      });
    case "verdict":
      return void named("immediate", () => {
        w.be32(A.immediate.DREG, REG.VERDICT);
        writeVerdict(w, A.immediate.DATA, e.code, e.chain);
      });
    case "numgen": {
      const a = A.numgen;
      return void named("numgen", () =>
        w.be32(a.DREG, REG.R1).be32(a.MODULUS, e.modulus).be32(a.TYPE, NUMGEN_RANDOM).be32(a.OFFSET, 0),
      );
    }
    case "fib":
      return void named("fib", () =>
        w.be32(A.fib.DREG, REG.R1).be32(A.fib.RESULT, FIB_RESULT_ADDRTYPE).be32(A.fib.FLAGS, e.flags),
      );
    case "lookup":
      return void named("lookup", () => {
        w.str(A.lookup.SET, e.set).be32(A.lookup.SREG, REG.R1);
        if (e.inverted) w.be32(A.lookup.FLAGS, LOOKUP_INVERTED);
      });
    case "dynset-update": {
      const a = A.dynset;
      return void named("dynset", () =>
        w.str(a.SET_NAME, e.set).be32(a.OP, DYNSET_UPDATE).be32(a.SREG_KEY, REG.R1),
      );
    }
    case "dnat": {
      const a = A.nat;
      return void named("nat", () =>
        w
          .be32(a.TYPE, NAT_DNAT)
          .be32(a.FAMILY, NFPROTO[e.family])
          .be32(a.REG_ADDR_MIN, REG.R1)
          .be32(a.REG_PROTO_MIN, REG.R2)
          .be32(a.FLAGS, NAT_PROTO_SPECIFIED),
      );
    }
  }
}

function writeVerdict(w: MessageWriter, type: number, code: number, chain: string | undefined): void {
  w.nest(type, (w) =>
    w.nest(DATA.VERDICT, (w) => {
      w.be32(VERDICT_ATTR.CODE, code);
      if (chain !== undefined) w.str(VERDICT_ATTR.CHAIN, chain);
    }),
  );
}

interface ElementBytes {
  readonly key: Uint8Array;
  readonly verdict?: { code: number; chain?: string };
  readonly comment?: Uint8Array;
}

function elementBytes(e: NftElement, types: ContainerTypes, withValue: boolean): ElementBytes | undefined {
  const typeText = types(e.container);
  const fields: { key: FieldType[]; value: FieldType[] } | undefined = typeText
    ? fieldTypes(typeText)
    : undefined;
  if (!fields) return undefined;
  // A key may come as one part that nft reads as several ("10.0.0.1 . tcp . 80").
  const key = elementKey(
    e.key.flatMap((k) => k.split(" . ")),
    fields.key,
  );
  if (!key) return undefined;
  if (!withValue) return { key };
  if (fields.value.length > 0 !== (e.value !== undefined)) return undefined;
  const verdict = e.value === undefined ? undefined : elementVerdict(e.value);
  if (e.value !== undefined && !verdict) return undefined;
  return {
    key,
    ...(verdict ? { verdict } : {}),
    ...(e.comment !== undefined ? { comment: comment(e.comment) } : {}),
  };
}

/** One message of the batch, or undefined when the operation is not one written here. */
type MessageFor = (w: MessageWriter, seq: number, flags: number) => void;

/**
 * A named address set as nft 1.0.6 makes it (`{ type ipv4_addr ; flags dynamic,timeout ; timeout
 * Ns ; }`), or undefined for any other set. Its userdata is exactly 1.0.6's, which every nft reads.
 */
function newAddressSet(o: NftSet, setId: number): ((w: MessageWriter) => void) | undefined {
  const key = o.type === undefined ? undefined : ADDRESS_SET_TYPES[o.type];
  if (!key || o.comment !== undefined) return undefined;
  let flags = 0;
  for (const f of o.flags ?? []) {
    const bit = SET_FLAGS[f];
    if (bit === undefined) return undefined;
    flags |= bit;
  }
  const timeout = o.timeoutSeconds;
  if (timeout !== undefined && !(Number.isSafeInteger(timeout) && timeout > 0 && timeout <= 2 ** 32))
    return undefined;
  return (w) => {
    w.str(SET.NAME, o.name).be32(SET.FLAGS, flags).be32(SET.KEY_TYPE, key.type).be32(SET.KEY_LEN, key.len);
    w.be32(SET.ID, setId);
    if (timeout !== undefined) w.be64(SET.TIMEOUT, timeout * 1000);
    w.attr(SET.USERDATA, ADDRESS_SET_USERDATA);
  };
}

function messageFor(
  op: NftOperation,
  family: IPFamily,
  table: string,
  types: ContainerTypes,
  setId: number,
): MessageFor | undefined {
  const nfproto = NFPROTO[family];
  const { verb, object: o } = op;
  switch (o.kind) {
    case "chain": {
      if (o.base) return undefined;
      const name = o.name;
      if (verb === "add") {
        const udata = o.comment === undefined ? undefined : comment(o.comment);
        return (w, seq, flags) =>
          w.nftMessage(nftMessageType(MSG.NEWCHAIN), flags | NLM_F_CREATE, seq, nfproto, 0, (w) => {
            w.str(CHAIN.TABLE, table).str(CHAIN.NAME, name);
            if (udata) w.attr(CHAIN.USERDATA, udata);
          });
      }
      // A flush is a rule delete naming only the chain.
      const type = verb === "flush" ? MSG.DELRULE : MSG.DELCHAIN;
      return (w, seq, flags) =>
        w.nftMessage(nftMessageType(type), flags, seq, nfproto, 0, (w) =>
          w
            .str(verb === "flush" ? RULE.TABLE : CHAIN.TABLE, table)
            .str(verb === "flush" ? RULE.CHAIN : CHAIN.NAME, name),
        );
    }
    case "rule": {
      if (verb !== "add") return undefined;
      const exprs = ruleExpressions(o.rule, family);
      if (!exprs) return undefined;
      const udata = o.comment === undefined ? undefined : comment(o.comment);
      const chain = o.chain;
      return (w, seq, flags) =>
        w.nftMessage(
          nftMessageType(MSG.NEWRULE),
          flags | NLM_F_CREATE | NLM_F_APPEND,
          seq,
          nfproto,
          0,
          (w) => {
            w.str(RULE.TABLE, table).str(RULE.CHAIN, chain);
            w.nest(RULE.EXPRESSIONS, (w) => {
              for (const e of exprs) writeExpr(w, e);
            });
            if (udata) w.attr(RULE.USERDATA, udata);
          },
        );
    }
    case "set":
    case "map": {
      const name = o.name;
      if (verb === "add") {
        const body = o.kind === "set" ? newAddressSet(o, setId) : undefined;
        if (!body) return undefined;
        return (w, seq, flags) =>
          w.nftMessage(nftMessageType(MSG.NEWSET), flags | NLM_F_CREATE, seq, nfproto, 0, (w) => {
            w.str(SET.TABLE, table);
            body(w);
          });
      }
      // A flush is an element delete naming no element.
      if (verb === "flush")
        return (w, seq, flags) =>
          w.nftMessage(nftMessageType(MSG.DELSETELEM), flags, seq, nfproto, 0, (w) =>
            w.str(ELEMS.TABLE, table).str(ELEMS.SET, name),
          );
      return (w, seq, flags) =>
        w.nftMessage(nftMessageType(MSG.DELSET), flags, seq, nfproto, 0, (w) =>
          w.str(SET.TABLE, table).str(SET.NAME, name),
        );
    }
    case "element": {
      if (verb === "flush") return undefined;
      const add = verb === "add";
      const el = elementBytes(o, types, add);
      if (!el) return undefined;
      const set = o.container;
      return (w, seq, flags) =>
        w.nftMessage(
          nftMessageType(add ? MSG.NEWSETELEM : MSG.DELSETELEM),
          add ? flags | NLM_F_CREATE : flags,
          seq,
          nfproto,
          0,
          (w) => {
            w.str(ELEMS.TABLE, table).str(ELEMS.SET, set);
            w.nest(ELEMS.ELEMENTS, (w) =>
              w.nest(LIST_ELEM, (w) => {
                w.nest(ELEM.KEY, (w) => w.attr(DATA.VALUE, el.key));
                if (el.verdict) writeVerdict(w, ELEM.DATA, el.verdict.code, el.verdict.chain);
                if (el.comment) w.attr(ELEM.USERDATA, el.comment);
              }),
            );
          },
        );
    }
    case "table":
      return undefined;
  }
}

/**
 * The batch for `ops` in `table` of `family` (every message acked when `ack`); undefined when
 * any operation is one this module does not write (the transaction then goes to nft whole).
 */
export function encodeBatch(
  ops: readonly NftOperation[],
  family: IPFamily,
  table: string,
  types: ContainerTypes,
  opts: { readonly firstSeq: number; readonly ack: boolean },
): EncodedBatch | undefined {
  const messages: MessageFor[] = [];
  for (const op of ops) {
    // Every set made in the batch gets an id of its own, as nft numbers them.
    const m = messageFor(op, family, table, types, messages.length + 1);
    if (!m) return undefined;
    messages.push(m);
  }
  const w = new MessageWriter();
  const operationOf = new Map<number, number>();
  let seq = opts.firstSeq;
  operationOf.set(seq, -1);
  w.batchBegin(seq++);
  const flags = NLM_F_REQUEST | (opts.ack ? NLM_F_ACK : 0);
  messages.forEach((m, i) => {
    operationOf.set(seq, i);
    m(w, seq++, flags);
  });
  w.batchEnd(seq++);
  return { bytes: w.bytes(), operationOf, messages: messages.length };
}
