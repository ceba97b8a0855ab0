"""Checks `kiln compile --stats --world N` against the same model's
one-rank --stats (ScalingModel.h): the ring all-reduce's bytes and time
per link recomputed from the link table, efficiencies in (0, 1] and
ordered by link speed, the rank's share of the tokens.

  check_data_parallel_stats.py ONE.json WORLD.json N
"""
import json
import sys


def main():
    one = json.load(open(sys.argv[1]))
    many = json.load(open(sys.argv[2]))
    n = int(sys.argv[3])
    dp = many['data_parallel']
    assert 'data_parallel' not in one
    assert dp['world'] == n, dp['world']
    # The accumulators hold one f32 gradient per parameter.
    assert dp['gradient_bytes'] == 4 * many['params'], dp['gradient_bytes']
    per_rank = 2 * (n - 1) / n * dp['gradient_bytes']
    assert abs(dp['bytes_per_rank_per_step'] - per_rank) <= 1e-6 * per_rank
    assert dp['overlapped_fraction'] == 0
    assert many['roofline']['tokens_per_step'] * n == \
        one['roofline']['tokens_per_step']
    previous = None
    for link in dp['links']:
        ms = (per_rank / link['bytes_per_s'] +
              2 * (n - 1) * link['latency_s']) * 1e3
        assert abs(link['all_reduce_ms'] - ms) <= 1e-9 * ms, (link, ms)
        assert link['gpus'], link
        for gpu in link['gpus']:
            step = gpu['step_ms']
            assert 0 < gpu['efficiency'] <= 1, gpu
            assert abs(gpu['efficiency'] - step / (step + ms)) <= 1e-12
        efficiency = link['gpus'][0]['efficiency']
        print('%s: all-reduce %.3f ms, efficiency on %s %.3f' %
              (link['link'], link['all_reduce_ms'], link['gpus'][0]['gpu'],
               efficiency))
        # The table runs from the fastest link to the slowest.
        assert previous is None or efficiency <= previous, (link, previous)
        previous = efficiency


main()
