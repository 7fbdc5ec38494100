// Memory layout: every region TS and wasm share, declared once.
//
// Linear memory is managed by mem.ts (size classes, sized frees, memory grown by what is needed,
// >= 1 MiB at a time); the runtime's TLSF only keeps what it set up at start-up, and there are
// no managed objects, so no GC work. Fixed I/O scratch regions are allocated at start-up and
// only ever grow on a cold scratchReserve() call; hot exports read their inputs from, and write
// their results to, them.
//
//   region            element  written by   read by   meaning
//   ----------------- -------  -----------  --------  -----------------------------------------
//   R_PARAMS    (0)   u64 x64  TS / wasm    both      scalar u64 parameters and results (P_*)
//   R_HASH_A    (1)   u64      TS / wasm    both      local block hashes: hash output, match
//                                                     query, stored blocks' tokens_hash
//   R_HASH_B    (2)   u64      TS / wasm    both      engine (external) block hashes for
//                                                     store/remove; sequence-hash output
//   R_TOKENS    (3)   u32      TS           wasm      token ids to hash
//   R_MM_COUNTS (4)   u32      TS           wasm      per block: number of mm hashes (0 = none)
//   R_MM_HASHES (5)   u64      TS           wasm      all blocks' mm hashes, concatenated
//   R_BYTES     (6)   u8       TS           wasm      raw bytes for xxh3 (strings, tests)
//   R_OUT_SLOT  (7)   u32      wasm         TS        match rows: worker slot
//   R_OUT_DEV   (8)   u32      wasm         TS        match rows: device blocks (prefix depth)
//   R_OUT_HOST  (9)   u32      wasm         TS        match rows: host-pinned extension blocks
//   R_OUT_DISK  (10)  u32      wasm         TS        match rows: disk extension blocks
//   R_OUT_EXTN  (11)  u32      wasm         TS        match rows: external extension blocks
//   R_OUT_F64A  (12)  f64      wasm         TS        credit rows: effective overlap blocks
//   R_OUT_F64B  (13)  f64      wasm         TS        credit rows: router credit blocks
//   R_OUT_U32A  (14)  u32      wasm         TS        credit rows: cached tokens / dump data
//   R_OUT_U32B  (15)  u32      wasm         TS        credit rows: effective prefill tokens / dump
//   R_DUMP_U64  (16)  u64      wasm         TS        dump rows: hashes
//   R_TMP       (17)  u8       wasm         wasm      internal work space (stacks, sets)
//   R_HASH_C    (18)  u64      TS / wasm    both      third u64 array (dump parents, aux input)
//
// TS learns pointers and capacities from scratchPtr()/scratchCap() and rebuilds its typed-array
// views whenever memory.buffer changes (memory growth detaches old views).

export const R_PARAMS: i32 = 0;
export const R_HASH_A: i32 = 1;
export const R_HASH_B: i32 = 2;
export const R_TOKENS: i32 = 3;
export const R_MM_COUNTS: i32 = 4;
export const R_MM_HASHES: i32 = 5;
export const R_BYTES: i32 = 6;
export const R_OUT_SLOT: i32 = 7;
export const R_OUT_DEV: i32 = 8;
export const R_OUT_HOST: i32 = 9;
export const R_OUT_DISK: i32 = 10;
export const R_OUT_EXTN: i32 = 11;
export const R_OUT_F64A: i32 = 12;
export const R_OUT_F64B: i32 = 13;
export const R_OUT_U32A: i32 = 14;
export const R_OUT_U32B: i32 = 15;
export const R_DUMP_U64: i32 = 16;
export const R_TMP: i32 = 17;
export const R_HASH_C: i32 = 18;
export const REGION_COUNT: i32 = 19;

// Slots of R_PARAMS (u64 cells).
export const P_SEED: i32 = 0;        // block-hash seed (public: 1337 + LoRA + namespace; keyed: block_seed)
export const P_CHAIN_SEED: i32 = 1;  // sequence-hash chain seed (public: 1337; keyed: chain_seed)
export const P_RESULT: i32 = 2;      // single u64 result (xxh3, salt seed)
export const P_PARENT: i32 = 3;      // parent engine hash of a Stored event
export const P_AUX: i32 = 4;         // spare

// Storage tiers (algorithms §3.1). Device is the radix tree; the others are continuation indexes.
export const TIER_DEVICE: i32 = 0;
export const TIER_HOST: i32 = 1;
export const TIER_DISK: i32 = 2;
export const TIER_EXTERNAL: i32 = 3;
export const TIER_COUNT: i32 = 4;

// Sentinels.
export const NONE: u32 = 0xffffffff;   // "no node / empty table cell"
export const FREED: u32 = 0xfffffffe;  // holder count of a node on the free list

// Status codes returned by event-applying exports (>= 0 means success: blocks applied).
export const ST_PARENT_NOT_FOUND: i32 = -1;
export const ST_INVALID_SEQUENCE: i32 = -2;  // duplicate hashes in one store, or a block equal to its parent
export const ST_BAD_SLOT: i32 = -3;
export const ST_BAD_INDEX: i32 = -4;

// ---------------------------------------------------------------------------------------------
// The index in linear memory: one Index per partition (state.ts), everything addressed by u32
// record indexes or pointers, every block from mem.ts (size classes, no headers, memory grown by
// what is needed). Tables are hashtab.ts tables: a directory of buckets of 8-byte cells
// (value u32 | key fingerprint u32); keys stay in the records, so a candidate is verified there.
//
//   Index
//   +-- p0: node pool ----- segments of 4,096 nodes (32 B); node 0 is the root
//   |     +-- child table:  fp = top 32 bits of the node's path hash -> node
//   +-- p1..p3: edge pools  segments of 4,096 edges (40 B), one per lower tier
//   |     +-- edge table:   fp of (parent ext | none, local) -> edge
//   +-- maps[slot][tier]:   fp of the engine hash -> node / edge (the slot's lookup)
//   +-- per-slot match work: depth, stamp, pos, row (u32), last (u64)
//
// Device node (32 bytes: two per cache line, none straddles one):
//
//    0               8               16      20      24      28      32
//    +---------------+---------------+-------+-------+-------+-------+
//    | hash     u64  | ext0     u64  | parent| hold  | kids  | kpos  |
//    +---------------+---------------+-------+-------+-------+-------+
//
//   hash    path hash: mix64(hash(parent) + local), hash(root) = 0. It is the child-link key: a
//           block's position in the tree is computable from the query alone, so the probes of a
//           whole chain are independent loads (radix.ts). mix64 is a bijection, so (parent, hash)
//           identifies (parent, local) exactly, and local = unmix64(hash) - hash(parent) (dump).
//   ext0    the engine hash of the single holder (hold odd)
//   parent  parent node (the root's is NONE)
//   hold    (slot << 1) | 1: one holder; an even value: pointer to a holder set; 0: none (root);
//           FREED: the node is on the free list
//   kids    NONE: no child; (child << 1) | 1: one child; even: pointer to a child array
//   kpos    this node's index in its parent's child array (O(1) unlink); free-list link
//
// Holder set (two or more holders), sized to the sharing:
//    [count u32 | cap u32 | slots u32 x cap | exts u64 x cap]
//    cap 2..8: entries [0, count) dense, scanned; cap >= 16: open addressing by slot (NONE empty,
//    load <= 3/4), so a lookup stays O(1) at thousands of holders.
// Child array (two or more children): [count u32 | cap u32 | nodes u32 x cap], dense.
//
// Tier edge (40 bytes): local u64 | parentExt u64 | hasParent u32 | count u32 | o0 u32 | link u32
//   | childExt u64; owners: o0 (count 1) or a vector [cap u32 | pad | slots u32 x cap].

export const NODE_BYTES: u32 = 32;
export const N_HASH: usize = 0;
export const N_EXT0: usize = 8;
export const N_PARENT: usize = 16;
export const N_HOLD: usize = 20;
export const N_KIDS: usize = 24;
export const N_KPOS: usize = 28;

export const EDGE_BYTES: u32 = 40;
