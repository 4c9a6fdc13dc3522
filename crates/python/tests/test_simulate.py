"""simulate: the replay of `coopcache sim`, row for row."""

import pandas as pd

import coopcache
from conftest import PHOTO, PHOTO_CSV, W106

W106_SIZES = [2750, 27500, 137500]


def test_lru_arc_and_wtinylfu_on_w106_give_libcachesims_misses(w106_golden):
    policies = ["lru", "arc", "wtinylfu"]
    df = coopcache.simulate(W106, policies, W106_SIZES, format="be32")
    assert len(df) == 9
    # Policy-major, as the CLI prints them.
    assert list(df.policy) == [p for p in policies for _ in W106_SIZES]
    for row in df.itertuples():
        assert row.requests == 5292456
        assert row.misses == w106_golden[(row.policy, row.cache_size_objects)], row
        assert row.miss_ratio == row.misses / row.requests
        # A block trace: 8 KiB blocks, so bytes are requests times 8192.
        assert row.block_size == 8192
        assert row.bytes_missed == row.misses * 8192
    lru = df[df.policy == "lru"].set_index("cache_size_objects").misses
    assert lru.to_dict() == {2750: 1069622, 27500: 435503, 137500: 321241}


def test_columns_are_those_of_sim_json():
    df = coopcache.simulate(W106, "lru", 2750, format="be32")
    assert list(df.columns) == [
        "trace", "policy", "cache_size_objects", "block_size", "cache_size_bytes",
        "requests", "misses", "miss_ratio", "bytes_requested", "bytes_missed",
        "byte_miss_ratio", "writes", "deletes", "zero_size_skipped", "elapsed_s",
        "requests_per_s",
    ]
    assert df.trace[0] == "w106.trace.xz"
    assert df.cache_size_bytes[0] == 2750 * 8192


def test_tencent_photo_byte_cache_matches_the_readme():
    # docs/guide/simulator.md: `coopcache sim tencent-photo-sample.csv.bz2 --format csv
    # --csv sep=space,id=2,size=5,ids=hash --policy lru,arc,s3fifo
    # --cache-size 100MiB,10MiB`.
    df = coopcache.simulate(
        PHOTO, ["lru", "arc", "s3fifo"], ["100MiB", "10MiB"], format="csv", csv=PHOTO_CSV
    )
    got = {(r.policy, r.cache_size_bytes): r for r in df.itertuples()}
    lru = got[("lru", 100 << 20)]
    assert (lru.requests, lru.misses) == (9954, 9574)
    assert round(lru.byte_miss_ratio, 4) == 0.9281
    assert lru.zero_size_skipped == 46
    assert pd.isna(lru.cache_size_objects) and pd.isna(lru.block_size)
    expected = {
        ("lru", 10 << 20): (9865, 0.9927),
        ("arc", 100 << 20): (9555, 0.9273),
        ("arc", 10 << 20): (9822, 0.9900),
        ("s3fifo", 100 << 20): (9581, 0.9286),
        ("s3fifo", 10 << 20): (9826, 0.9779),
    }
    for key, (misses, bmr) in expected.items():
        assert (got[key].misses, round(got[key].byte_miss_ratio, 4)) == (misses, bmr), key


def test_block_size_divides_byte_sizes_of_a_trace_without_sizes():
    df = coopcache.simulate(W106, "lru", "22000KiB", format="be32", block_size=8192)
    # 22000 KiB / 8 KiB = 2750 blocks: the same cache as above.
    assert df.cache_size_objects[0] == 2750
    assert df.misses[0] == 1069622
