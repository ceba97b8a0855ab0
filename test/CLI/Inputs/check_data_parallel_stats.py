"""Checks `kiln compile --stats --world N` against the same model's
one-rank --stats (ScalingModel.h): the ring all-reduce's bytes and time
per link recomputed from the link table, the rank's share of the tokens,
and per GPU the buckets' sums: as many as the step's collectives (one,
after the last micro-batch, where it has none), their time at least the
whole all-reduce's (a latency per bucket), the exposed part within what
the time after the first bucket is ready can hide, the efficiency
step / (step + exposed) in (0, 1] and ordered by link speed. Prints the
fastest link's overlapped fraction.

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
    buckets = many['collectives'] or 1
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
            sums, exposed = gpu['sums_ms'], gpu['exposed_ms']
            assert gpu['buckets'] == buckets, (gpu, buckets)
            latency = 2 * (n - 1) * link['latency_s'] * 1e3
            assert abs(sums - (ms + (buckets - 1) * latency)) <= 1e-9 * sums
            ready, end = gpu['first_bucket_ready_ms'], gpu['last_micro_batch_ms']
            assert 0 <= ready <= end <= step, gpu
            assert max(0.0, sums - (end - ready)) - 1e-9 <= exposed <= sums + 1e-9
            assert abs(gpu['overlapped_fraction'] - (1 - exposed / sums)) \
                <= 1e-12
            assert 0 < gpu['efficiency'] <= 1, gpu
            assert abs(gpu['efficiency'] - step / (step + exposed)) <= 1e-12
        first = link['gpus'][0]
        efficiency = first['efficiency']
        print('%s: all-reduce %.3f ms, %d bucket(s), efficiency on %s %.3f, '
              'overlapped %.3f' %
              (link['link'], link['all_reduce_ms'], first['buckets'],
               first['gpu'], efficiency, first['overlapped_fraction']))
        # The table runs from the fastest link to the slowest.
        assert previous is None or efficiency <= previous, (link, previous)
        previous = efficiency


main()
