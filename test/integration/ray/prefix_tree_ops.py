"""Random operations on Ray's own PrefixTree, with what it answered, as JSON on stdout.

Run in the Ray venv (Ray 2.58.0): prefix-tree-differential.test.ts replays the operations on
select-service's RoutedPrefixTree (one character = one block) and compares every answer.
Usage: python prefix_tree_ops.py SEEDS STEPS
"""
import json
import random
import sys

from ray.llm._internal.serve.routing_policies.prefix_aware.prefix_tree import PrefixTree


def run(seed, steps):
    rnd = random.Random(seed)
    tree = PrefixTree()
    live = [f"t{i}" for i in range(4)]
    tree.add_tenants(live, 0)
    now = 0
    ops = []
    for step in range(steps):
        r = rnd.random()
        if r < 0.5 and live:
            text = "".join(rnd.choice("abc") for _ in range(rnd.randint(1, 8)))
            tenant = rnd.choice(live)
            if rnd.random() < 0.7:  # else the same time as the last insert: evicted together
                now += 1
            tree.insert(text, tenant, now)
            ops.append(["insert", text, tenant, now])
        elif r < 0.75 and live:
            text = "".join(rnd.choice("abc") for _ in range(rnd.randint(0, 8)))
            available = rnd.sample(live, rnd.randint(1, len(live)))
            matched, tenants = tree.prefix_match(text, available)
            ops.append(["match", text, available, len(matched), tenants or []])
        elif r < 0.9 and live:
            tenant = rnd.choice(live)
            n = rnd.randint(0, 10)
            ops.append(["evict", tenant, n, tree.evict_tenant_by_lru(tenant, n)])
        elif r < 0.95 and live:
            tenant = rnd.choice(live)
            ops.append(["remove", tenant, tree.remove_tenants([tenant])[tenant]])
            live.remove(tenant)
        else:
            tenant = f"n{step}"
            tree.add_tenants([tenant], now)
            live.append(tenant)
            ops.append(["add", tenant])
        ops.append(["counts", dict(tree.tenant_to_char_count)])
    return ops


if __name__ == "__main__":
    seeds, steps = int(sys.argv[1]), int(sys.argv[2])
    json.dump([run(seed, steps) for seed in range(seeds)], sys.stdout)
