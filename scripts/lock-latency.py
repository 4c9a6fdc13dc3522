"""Median and p99 of an fcntl lock and unlock of one file, N times:
    python3 scripts/lock-latency.py FILE N
on a mount of a two-node cluster (docs/guide/mount.md quotes it) and on
the origin directory itself for comparison."""
import fcntl, os, sys, time, statistics
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDWR)
ts = []
for i in range(n):
    t = time.perf_counter()
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    fcntl.lockf(fd, fcntl.LOCK_UN)
    ts.append(time.perf_counter() - t)
ts.sort()
print(f"{path}: {n} lock+unlock, median {statistics.median(ts)*1e6:.0f} us, p99 {ts[int(n*0.99)]*1e6:.0f} us")
