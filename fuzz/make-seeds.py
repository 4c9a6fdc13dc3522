"""Writes the fuzz targets' seed corpora (fuzz/corpus/TARGET/): a few small,
real inputs each. Run from anywhere: python3 fuzz/make-seeds.py. Needs the
sample traces in ../shared/traces beside the checkout, and gzip, xz, zstd,
bzip2 and openssl (test certificates for the `hello` target)."""
import struct, os, subprocess, gzip, bz2, lzma, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
C = os.path.join(HERE, 'corpus')
T = os.path.join(HERE, '..', '..', 'shared', 'traces')
CERTS = tempfile.mkdtemp()
def put(target, name, data):
    d = os.path.join(C, target); os.makedirs(d, exist_ok=True)
    if isinstance(data, str): data = data.encode()
    open(os.path.join(d, name), 'wb').write(data)
def sh(cmd): return subprocess.run(cmd, shell=True, capture_output=True, check=True).stdout

# --- frames (docs/PROTOCOL.md; crates/node/src/frame.rs) ---
def s(x): x = x.encode(); return bytes([len(x)]) + x
def block(f, i, route=0x0a0b0c0d): return struct.pack('>QII', f, i, route)
def digest(): return bytes(range(32)) + struct.pack('>I', 65536)
def hello(name, node=9, version=8, bs=65536, listen='127.0.0.1:7170'):
    return bytes([1]) + b'COOP' + struct.pack('>HI', version, node) + s(name) + s(listen) + struct.pack('>I', bs)
bodies = {
 'hello': hello('n9'),
 'members': bytes([2]) + struct.pack('>H', 2) + struct.pack('>I', 1) + s('a:1') + struct.pack('>I', 2) + s('10.0.0.2:7170'),
 'gossip': bytes([3]) + b'swim datagram',
 'read': bytes([16]) + block(0x0102030405060708, 77),
 'record': bytes([22]) + block(5, 1) + digest(),
 'forward': bytes([32]) + block(5, 1) + struct.pack('>I', 3),
 'expect': bytes([33]) + block(5, 2) + digest() + struct.pack('>I', 5),
 'fetch-origin': bytes([34]) + block(5, 3) + b'\x01',
 'hash-is-some': bytes([35]) + block(5, 4) + b'\x01' + digest(),
 'hash-is-none': bytes([35]) + block(5, 4) + b'\x00',
 'singlet': bytes([36]) + block(5, 5) + b'\x01',
 'data': bytes([48]) + block(7, 0) + b'some block bytes',
 'recirculate': bytes([52]) + block(7, 1) + b'\x02' + b'block bytes',
 'place': bytes([53]) + block(7, 2) + b'placed bytes',
 'ping': bytes([54]) + struct.pack('>Q', 5),
 'lock': bytes([70]) + struct.pack('>Q', 1) + struct.pack('>H', 1) + b'f' + b'\x00' + struct.pack('>Q', 7) + b'\x01' + struct.pack('>QQ', 0, 2**64 - 1) + b'\x01' + struct.pack('>I', 42),
 'lock-answer-conflict': bytes([77]) + struct.pack('>Q', 1) + b'\x01' + struct.pack('>IQ', 2, 7) + b'\x01' + struct.pack('>QQ', 0, 99) + struct.pack('>I', 42),
 'granted': bytes([78]) + struct.pack('>Q', 1) + b'\x00',
}
for k, b in bodies.items():
    put('frame_decode', k, struct.pack('>I', len(b)) + b)
# frame_roundtrip: arbitrary's encoding of AnyWire; any bytes are valid input.
for i, k in enumerate(['hello', 'data', 'members', 'recirculate']):
    put('frame_roundtrip', 'bytes-%d' % i, bodies[k])
put('frame_roundtrip', 'zeros', bytes(64))
# hello: u16 certificate length, certificate DER, Hello body. peer1 names
# itself by common name, peer2 by a DNS name beside the cluster's, peer3
# carries its node id (3) as the URI the CA writes.
def cert(name, subject, ext):
    out = os.path.join(CERTS, name + '.der')
    sh(f'openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes '
       f'-keyout {CERTS}/{name}.key -subj {subject} {ext} -days 30 -outform DER -out {out}')
    return out
cert('peer1', '/CN=peer1', '')
cert('peer2', '/O=x', '-addext subjectAltName=DNS:peer2,DNS:coopcache.cluster')
cert('peer3', '/CN=peer3', '-addext subjectAltName=DNS:coopcache.cluster,URI:urn:coopcache:node:3')
for cert, name in [('peer1.der', 'peer1'), ('peer2.der', 'peer2'), ('peer3.der', 'peer3')]:
    der = open(os.path.join(CERTS, cert), 'rb').read()
    put('hello', name, struct.pack('>H', len(der)) + der + hello(name, node=3))
put('hello', 'no-cert', struct.pack('>H', 0) + hello('', node=3))
put('hello', 'bad-version', struct.pack('>H', 0) + hello('', node=3, version=1))

# --- traces ---
lirs = sh(f'gzip -dc {T}/cs.trace.gz | head -40')
put('trace_lirs', 'cs-head', lirs)
put('trace_lirs', 'marker', b'12\n*\n34\n12\n')
lis = sh(f'zstd -dc {T}/oltp.lis.zst | head -20')
put('trace_lis', 'oltp-head', lis)
be32 = sh(f'xz -dc {T}/w106.trace.xz | head -c 512')
put('trace_be32', 'w106-head', be32)
oracle = b''.join(struct.pack('<IQIq', t, i, 4096, n) for t, i, n in [(1, 7, 3), (2, 8, -1), (3, 7, -1), (4, 2**40, 9)])
put('trace_oracle', 'records', oracle)
msr = sh(f'head -12 {T}/snia/msr-cambridge1-sample.csv')
put('trace_msr', 'sample-8k', b'\x00' + msr)
put('trace_msr', 'sample-1b', b'\x02' + msr[:400])
tencent = sh(f'bzip2 -dc {T}/snia/tencent-block-sample.csv.bz2 | head -12')
put('trace_tencent', 'sample-8k', b'\x00' + tencent)
put('trace_tencent', 'sample-512', b'\x01' + tencent[:300])
put('trace_csv', 'default', b'\n' + b'1\n2\n1\n3\n')
put('trace_csv', 'columns', b'id=2,time=1,size=3,op=4,client=5,header=yes\ntime,id,size,op,client\n1,a7,100,r,alice\n2,9,200,w,bob\n3.5,7,5,get,alice\n')
put('trace_csv', 'hash-tab', b'id=1,ids=hash,sep=tab,op=2\nobj/a\tread\nobj/b\twrite\nobj/a\t0\n')
# libCacheSim's lcs (8 KiB header, then version-2 records), txt, vscsi
# (version 1 and 2 records) and Twitter's csv (twr).
M = 0x123456789abcdef0
lcs_head = struct.pack('<QQ', M, 2) + bytes(8192 - 24) + struct.pack('<Q', M)
put('trace_lcs', 'v2', lcs_head + b''.join(struct.pack('<IQIIq', t, i, 100, op | (5 << 8), -1) for t, i, op in [(1, 7, 1), (2, 8, 3), (3, 7, 9)]))
put('trace_txt', 'ids', b'5\n0x1f\n\n5\n')
put('trace_vscsi', 'v1', b''.join(struct.pack('<IIIHHQQ', 1, 4096, 1, 0x28, 1 << 8, lbn, 10**6 * lbn) for lbn in [3, 4, 3]))
put('trace_vscsi', 'v2', b''.join(struct.pack('<HHIIIQQQ', 0x2a, 2 << 8, 1, 512, 1, lbn, 10**6, 9) for lbn in [3, 4, 3]))
put('trace_twr', 'ops', b'0,k1,10,100,c1,get,0\n1,k2,8,0,c2,get,0\n1,k2,8,50,c2,set,3600\n2,k1,10,0,c1,delete,0\n')
# compressed: file bytes, then one byte picking the format (index in TraceFormat::ALL:
# lirs 0, lis 1, be32 2, oracle 3, csv 4, msr 5, tencent 6, lcs 7, txt 8, vscsi 9,
# twr 10).
put('trace_compressed', 'lirs.gz', gzip.compress(lirs[:200], mtime=0) + b'\x00')
put('trace_compressed', 'lis.zst', sh(f'zstd -dc {T}/oltp.lis.zst | head -8 | zstd -c -q') + b'\x01')
put('trace_compressed', 'be32.xz', lzma.compress(be32[:128]) + b'\x02')
put('trace_compressed', 'msr.bz2', bz2.compress(msr[:300]) + b'\x05')
put('trace_compressed', 'tencent.gz-gz', gzip.compress(tencent[:150], mtime=0) + gzip.compress(tencent[150:300], mtime=0) + b'\x06')
put('trace_compressed', 'plain-lirs', b'1\n2\n3\n1\n\x00')
files = b'op,size,file,type,client,offset,length\nw,8192,/etc/passwd,datafile,alice,4096,100\nr,128,i42,inode,bob,0,128\nr,1000,/bin/ls,x,alice,0,1000\nr,4096,/home,directory,bob,0,4096\n'
put('trace_file_requests', 'all-columns', files)
put('trace_file_requests', 'minimal-tab', b'file\ttype\tsize\na\tdatafile\t12\nb\ti\t3\n')
put('trace_file_requests', 'gzip', gzip.compress(files, mtime=0))

# --- policy and config files ---
for f in ['cc-012.toml', 'fwd-01.toml', 'repl-01-cc-2-discard-3.toml']:
    put('class_file', f, open('/work/main/docs/class-policies/' + f, 'rb').read())
put('class_file', 'header-example', '''[default]
cooperative = true
forward_evictions = true
discard_cache = false
exclusive = false
replica = false

[[class]]
name = "small"
below = "10KiB"
cooperative = false

[[class]]
name = "mid"
below = 1048576

[[class]]
name = "large"
''')
put('node_config', 'full', '''origin = "s3://bucket/prefix"
memory = "2GiB"
algorithm = "nchance"
policy = "lru"
listen = "127.0.0.1:7170"
advertise = "node1.example:7170"
http = "127.0.0.1:7171"
join = ["10.0.0.2:7170", "10.0.0.3:7170"]
discover = false
discover_group = "239.255.70.67:7172"
data_dir = "/var/lib/coopcache"
name = "node1"
id = 1
block_size = "64KiB"
chances = 2
attr_ttl = "0s"
origin_delay = "5ms"
''')
put('node_config', 'small', 'origin = "/srv/data"\nmemory = "512MiB"\nalgorithm = "hash"\npolicy = "s3fifo"\n')
for i, o in enumerate(['.', '/srv/data', 'file:///srv/data', 's3://bucket', 's3://my-bucket/some/prefix/', 'http://127.0.0.1:8080/files/', 'https://cdn.example.com']):
    put('origin_spec', 'spec-%d' % i, o)
for i, p in enumerate(['a.txt', 'dir/sub/file.bin', '100% done.txt', '../etc/passwd', 'a/%2e%2e/b', 'a%2fb', '/abs', 'a//b', 'caf\u00e9/x']):
    put('origin_path', 'path-%d' % i, p)
for i, (size, r) in enumerate([(100, 'bytes=0-9'), (100, 'bytes=90-200'), (100, 'bytes=50-'), (100, 'bytes=-10'), (0, 'bytes=-5'), (1 << 40, 'bytes=0-1,5-6'), (100, 'items=0-1')]):
    put('gateway_range', 'range-%d' % i, struct.pack('>Q', size) + r.encode())
conditionals = ['"abc-1"\nIf-None-Match: "abc-1"', '"abc-1"\nIf-Match: "old", "abc-1"',
  'W/"weak"\nIf-Match: W/"weak"', '"abc-1"\nIf-Modified-Since: Tue, 14 Nov 2023 22:13:20 GMT',
  '"abc-1"\nIf-Unmodified-Since: Thu, 01 Jan 1970 00:00:01 GMT',
  '"abc-1"\nRange: bytes=0-9\nIf-Range: "abc-1"', '"abc-1"\nRange: bytes=0-9\nIf-Range: Tue, 14 Nov 2023 22:13:20 GMT',
  'x\nIf-None-Match: *\nIf-Match: garbage']
for i, t in enumerate(conditionals):
    put('gateway_conditional', 'cond-%d' % i, t)
for i, t in enumerate(['2750', '16MiB', '1.5 GiB', '64KB', '2GiB', '64 KiB', '4096', '1e400GiB', '12 parsecs']):
    put('size', 'size-%d' % i, t)
notations = ['16K/128 ID, x/4K General', '64K/128 ID, x/4K Temporal, 2M/128K Sequential',
  '32K/128 inode, x/4K Unix', 'x/4K Temporal, 1M/64K Sequential, 64K/128 ID, cutoff=2M',
  '4M/128 ID, x/4K Temporal, 16M/128K Sequential', '64K/128 ID, x/4K General, cutoff=big']
for i, t in enumerate(notations):
    put('attr_notation', 'notation-%d' % i, struct.pack('>Q', 4 << 20) + t.encode())

# join_wire: a selector byte (0 request, 1 answer, 2 token), then the body
# (crates/node/src/join/wire.rs, token.rs).
import base64
JOIN = b'COOJ\x01'
put('join_wire', 'request', b'\x00' + JOIN + bytes(range(32)) + s('node4') + struct.pack('>H', 3) + b'csr')
put('join_wire', 'issued', b'\x01' + JOIN + b'\x00' + struct.pack('>H', 4) + b'cert' + struct.pack('>H', 2) + b'ca')
for code, detail in [(1, b''), (2, b'node7'), (3, b'1764000000'), (4, b'node2'), (6, b'bad csr')]:
    put('join_wire', 'denied-%d' % code, b'\x01' + JOIN + bytes([code]) + struct.pack('>H', len(detail)) + detail)
raw = bytes(range(64)) + struct.pack('>Q', 1764000000) + s('10.0.0.1:7170')
put('join_wire', 'token', b'\x02cct1-' + base64.urlsafe_b64encode(raw).rstrip(b'='))

# Inputs that crashed a target before its fix (docs/reliability.md).
put('gateway_range', 'regress-huge-last', struct.pack('>Q', 100) + b'bytes=0-18446744073709551615')
put('attr_notation', 'regress-sum-overflow', struct.pack('>Q', 4 << 20) + b'16G/128 ID, 17179869183G/4K General')
put('trace_msr', 'regress-last-byte-1b', b'\x02' + b'0,hm,0,Read,18446744073709551615,1,0\n')
put('trace_file_requests', 'regress-last-byte', b'file,type,size,offset,length\na,datafile,10,18446744073709551615,5\n')
