"""simulate_cluster: the cooperative study of `coopcache sim --algorithms`."""

import pytest

import coopcache

# `coopcache sim --workload sprite-like --algorithms base,nchance
#  --workload-params requests=200000 --json`, run on the CLI.
CLI = {
    "base": dict(reads=82457, writes=3258, server_load=111054, load_origin=85494,
                 avg_read_us=3007.7573765720313, origin_rate=0.1728052196902628,
                 remote_hit=0.0, speedup_vs_base=1.0, clients_compared=16),
    "nchance": dict(reads=82457, writes=3258, server_load=130728, load_origin=63750,
                    avg_read_us=2368.971100088531, origin_rate=0.1288550395963957,
                    remote_hit=0.0497471409340626, speedup_vs_base=1.2696471377213627,
                    clients_compared=16),
}


def test_sprite_like_base_and_nchance_match_the_cli():
    df = coopcache.simulate_cluster(
        ["base", "nchance"], workload="sprite-like", workload_params="requests=200000"
    )
    assert list(df.algorithm) == ["base", "nchance"]
    assert set(df.nodes) == {42}
    assert set(df.node_cache_blocks) == {2048} and set(df.manager_cache_blocks) == {16384}
    for row in df.to_dict("records"):
        for key, want in CLI[row["algorithm"]].items():
            assert row[key] == pytest.approx(want, rel=1e-12), (row["algorithm"], key)
        assert len(row["clients"]) == 42


def test_one_row_per_algorithm_asked_for_base_simulated_anyway():
    kwargs = dict(workload="sprite-like", workload_params="requests=100000", client_cache="4MiB")
    df = coopcache.simulate_cluster("nchance,greedy", **kwargs)
    assert list(df.algorithm) == ["nchance", "greedy"]
    assert set(df.node_cache_blocks) == {512}
    # Compared with Base, which was simulated though not shown: the same
    # figures as with Base asked for.
    full = coopcache.simulate_cluster(["base", "nchance", "greedy"], **kwargs)
    base = full.iloc[0]
    for i, row in enumerate(df.itertuples(), start=1):
        assert row.speedup_vs_base == base.avg_read_us / row.avg_read_us
        assert (row.avg_read_us, row.server_load) == (
            full.avg_read_us[i],
            full.server_load[i],
        )
