"""The Ray routing bench's fake engine without Ray (stdlib only): prefix-cache hits, LRU eviction,
the KV events it makes, and outputs cached for the next turn. Run by
test/integration/ray/ray-routing-engine.test.ts (``python3 -m unittest`` in bench/)."""
from __future__ import annotations

import asyncio
import unittest
from typing import Any, Dict, List, Tuple

from ray_routing_cache import PrefixCache, chain_hashes
from ray_routing_engine import EngineParams, StepEngine

BS = 4


def params(capacity: int) -> EngineParams:
    # a tiny time scale: steps take microseconds; the tests look at what was cached, not when
    return EngineParams(block_size=BS, capacity_blocks=capacity, max_num_seqs=8, max_num_batched_tokens=64,
                        fixed_ms=5.0, prefill_token_ms=0.02, decode_seq_ms=0.006, decode_kv_token_ms=0.00005,
                        time_scale=0.001)


class Recorder:
    def __init__(self) -> None:
        self.removed: List[int] = []
        self.stored: List[Tuple[Any, List[int], List[int]]] = []

    def __call__(self, removed: List[int], stored: List[Tuple[Any, List[int], List[int]]]) -> None:
        self.removed.extend(removed)
        self.stored.extend(stored)


async def run(engine: StepEngine, tokens: List[int], output: List[int]) -> Dict[str, Any]:
    r = engine.submit(tokens, output)
    events = []
    while True:
        kind, value = await r.events.get()
        events.append(kind)
        if kind == "done":
            return {**value, "events": events}


class EngineTest(unittest.TestCase):
    def test_a_repeated_prompt_hits_every_block_but_the_one_holding_its_last_token(self) -> None:
        async def go() -> Tuple[Dict[str, Any], Dict[str, Any], Recorder]:
            kv = Recorder()
            engine = StepEngine(params(64), kv)
            prompt = list(range(1, 18))  # 4 full blocks and one token
            return await run(engine, prompt, [90, 91]), await run(engine, prompt, [92]), kv

        first, second, kv = asyncio.run(go())
        self.assertEqual((first["hit_blocks"], first["prompt_blocks"]), (0, 4))
        self.assertEqual(second["hit_blocks"], 4)
        self.assertEqual(first["events"][0], "first")
        # one BlockStored run from the root: the 4 prompt blocks, with their tokens and chained hashes
        parent, hashes, tokens = kv.stored[0]
        self.assertIsNone(parent)
        self.assertEqual(hashes, chain_hashes(list(range(1, 18)), BS))
        self.assertEqual(tokens, list(range(1, 17)))
        self.assertEqual(kv.removed, [])

    def test_the_next_turn_hits_the_previous_answer(self) -> None:
        async def go() -> Dict[str, Any]:
            engine = StepEngine(params(64), Recorder())
            prompt = list(range(1, 9))  # 2 blocks
            answer = list(range(100, 109))  # 9 tokens: prompt + answer cover 4 blocks once computed
            await run(engine, prompt, answer)
            return await run(engine, prompt + answer + [7, 7, 7, 7], [1])

        turn2 = asyncio.run(go())
        # 8 prompt + 8 computed answer tokens (the last one sampled never had its KV computed)
        self.assertEqual(turn2["hit_blocks"], 4)

    def test_an_output_block_is_reported_when_the_context_grows_into_a_new_block(self) -> None:
        async def go(prompt: int, output: int) -> List[str]:
            engine = StepEngine(params(64), Recorder())
            return (await run(engine, list(range(1, prompt + 1)), [1] * output))["events"]

        # 6 prompt tokens leave 2 in their second block: the 3rd output token opens the third, the
        # 7th the fourth
        self.assertEqual(asyncio.run(go(6, 7)), ["first", "block", "block", "done"])
        self.assertEqual(asyncio.run(go(6, 2)), ["first", "done"])
        # 8 fill two blocks: the first output token opens the third, the 5th the fourth
        self.assertEqual(asyncio.run(go(8, 5)), ["first", "block", "block", "done"])
        self.assertEqual(asyncio.run(go(8, 4)), ["first", "block", "done"])

    def test_a_full_cache_evicts_the_least_recently_released_chain_tail_first(self) -> None:
        async def go() -> Recorder:
            kv = Recorder()
            engine = StepEngine(params(6), kv)
            await run(engine, list(range(1, 13)), [1])  # 3 blocks + 1 for its output
            await run(engine, list(range(50, 66)), [1])  # needs 5: two of the first prompt's go
            return kv

        kv = asyncio.run(go())
        a = chain_hashes(list(range(1, 13)), BS)
        self.assertEqual(kv.removed, [a[2], a[1]])

    def test_the_cache_refuses_what_cannot_fit_and_changes_nothing(self) -> None:
        cache = PrefixCache(4)
        self.assertTrue(cache.admit([], 0, 3))
        self.assertFalse(cache.admit([], 0, 2))
        self.assertEqual(cache.used, 3)


if __name__ == "__main__":
    unittest.main()
