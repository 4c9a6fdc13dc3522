#!/usr/bin/env python3
"""SHARDS against the exact LRU curve: mean and largest absolute error of the
miss ratio (and byte miss ratio) over 50 sizes, 1% to 100% of the working set.

    scripts/shards-error.py COOPCACHE TRACE FORMAT [--csv SPEC] [RATE ...]

e.g. scripts/shards-error.py target/release/coopcache ../shared/traces/w106.trace.xz be32 0.1 0.01 0.001
"""
import json
import subprocess
import sys
import time


def curve(cmd):
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()], time.perf_counter() - start


def main():
    exe, trace, fmt, *rest = sys.argv[1:]
    base = [exe, "sim", "mrc", trace, "--format", fmt, "--json"]
    if rest and rest[0] == "--csv":
        base += ["--csv", rest[1]]
        rest = rest[2:]
    exact, secs = curve(base + ["--cache-size", "1%..100%:50"])
    key = "cache_size_bytes" if exact[0]["cache_size_bytes"] is not None else "cache_size_objects"
    unit = "B" if key == "cache_size_bytes" else ""
    sizes = ",".join(f"{r[key]}{unit}" for r in exact)
    print(f"{trace}: exact pass {secs:.2f} s")
    for rate in rest or ["0.1", "0.01", "0.001"]:
        sampled, secs = curve(base + ["--cache-size", sizes, "--shards", rate])
        for field in ["miss_ratio", "byte_miss_ratio"]:
            errors = [abs(a[field] - b[field]) for a, b in zip(exact, sampled)]
            print(
                f"  rate {rate}: {field} mean abs error {sum(errors) / len(errors):.4f}, "
                f"max {max(errors):.4f} ({secs:.2f} s)"
            )


if __name__ == "__main__":
    main()
