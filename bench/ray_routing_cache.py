"""The fake engine's prefix cache: KV blocks of ``block_size`` tokens, LRU eviction, vLLM's hashes.

After vLLM's block pool (vllm/v1/core/block_pool.py, kv_cache_manager.py): ``capacity`` physical
blocks; a full block is *cached* under its chained hash once computed; a cached block is held
(reference-counted) by the running requests that use it, or evictable (reference count 0, least
recently released first). A lookup walks the prompt's chained hashes from the root and stops at the
first miss, and never covers the last prompt token (vLLM always computes it).

Block hash: vLLM's ``hash_block_tokens`` shape, sha256 over ``(parent hash, block tokens,
extra keys)`` (here pickled, vLLM's ``sha256`` option), reduced to 64 bits as vLLM's int mode does
(``int.from_bytes(digest, "big") & (2**64 - 1)``). The service never recomputes these: it indexes
on its own hash of the events' ``token_ids`` and uses ours only to link parents and removals.

Simplification: a request reserves every block it will ever use (prompt and output) when it is
admitted, so nothing is preempted; a computed block whose hash is already cached is not cached
twice (vLLM keeps the duplicate as a private block; so do we, until the request ends).
"""
from __future__ import annotations

import hashlib
import pickle
from collections import OrderedDict
from typing import Dict, List, Optional, Tuple

MASK64 = (1 << 64) - 1


def block_hash(parent: Optional[int], tokens: Tuple[int, ...]) -> int:
    digest = hashlib.sha256(pickle.dumps((parent, tokens, None), protocol=pickle.HIGHEST_PROTOCOL)).digest()
    return int.from_bytes(digest, "big") & MASK64


def chain_hashes(tokens: List[int], block_size: int, parent: Optional[int] = None, start: int = 0) -> List[int]:
    """Chained hashes of the full blocks of ``tokens[start:]`` (``start`` a block boundary)."""
    out: List[int] = []
    for i in range(start, len(tokens) - block_size + 1, block_size):
        parent = block_hash(parent, tuple(tokens[i:i + block_size]))
        out.append(parent)
    return out


class PrefixCache:
    """Physical blocks of one replica, with the KV events their changes make."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.refs: Dict[int, int] = {}  # cached block -> running requests holding it
        self.lru: "OrderedDict[int, None]" = OrderedDict()  # cached blocks no request holds, oldest first
        self.private = 0  # reserved blocks not (yet) cached: partial, duplicate or not computed yet
        self.evicted = 0
        self.removed: List[int] = []  # evictions since the last take_removed()

    @property
    def used(self) -> int:
        return len(self.refs) + self.private

    def match(self, hashes: List[int], max_blocks: int) -> int:
        """How many leading blocks of ``hashes`` are cached (at most ``max_blocks``)."""
        n = 0
        for h in hashes[:max_blocks]:
            if h not in self.refs:
                break
            n += 1
        return n

    def admit(self, hashes: List[int], hit: int, new_blocks: int) -> bool:
        """Holds the ``hit`` leading blocks and reserves ``new_blocks`` more, evicting as needed;
        False (and nothing changed) when even evicting every unheld block would not make room."""
        pinned_evictable = sum(1 for h in hashes[:hit] if self.refs[h] == 0)
        if self.used + new_blocks - (len(self.lru) - pinned_evictable) > self.capacity:
            return False
        for h in hashes[:hit]:
            if self.refs[h] == 0:
                del self.lru[h]
            self.refs[h] += 1
        while self.used + new_blocks > self.capacity:
            victim, _ = self.lru.popitem(last=False)
            del self.refs[victim]
            self.removed.append(victim)
            self.evicted += 1
        self.private += new_blocks
        return True

    def store(self, h: int) -> bool:
        """A reserved block was computed and is full: cache it under ``h`` (held by its request).
        False when ``h`` is cached already (the block stays private)."""
        if h in self.refs:
            return False
        self.refs[h] = 1
        self.private -= 1
        return True

    def release(self, held: List[int], private: int) -> None:
        """A request ended: its cached blocks, tail first (so a chain's tail is evicted before
        its head), become evictable when no one else holds them; its private blocks are freed."""
        for h in reversed(held):
            n = self.refs[h] - 1
            self.refs[h] = n
            if n == 0:
                self.lru[h] = None
        self.private -= private

    def take_removed(self) -> List[int]:
        out, self.removed = self.removed, []
        return out
