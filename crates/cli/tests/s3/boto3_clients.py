"""boto3 against coopcache's S3 endpoint, as an S3 user would use it.

Run by crates/cli/tests/s3_clients.rs (a directory origin) and
mount_s3fs.rs (MinIO) with the endpoints of a cluster's nodes (ENDPOINTS,
comma-separated), the access key (KEY, SECRET) and the origin: ORIGIN, a
directory, or an `s3://bucket/prefix` with ORIGIN_ENDPOINT, ORIGIN_KEY and
ORIGIN_SECRET. The script fills bucket `data` in the origin itself, then
compares every byte read with the origin's and looks for every byte
written in the origin. Every check asserts; the last line printed is
`boto3: ok`.
"""

import hashlib
import os
import random
import urllib.error
import urllib.request

import boto3
import botocore
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

ENDPOINTS = os.environ["ENDPOINTS"].split(",")
KEY, SECRET, ORIGIN = os.environ["KEY"], os.environ["SECRET"], os.environ["ORIGIN"]
BUCKET = "data"


def client(endpoint, key=KEY, secret=SECRET, **kw):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **kw),
    )


def code(fn):
    """The S3 error code `fn` fails with."""
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    raise AssertionError("no error")


class DirOrigin:
    """A directory origin: bucket `b` is ORIGIN/b."""

    def path(self, key, bucket=BUCKET):
        return os.path.join(ORIGIN, bucket, key)

    def write(self, key, data):
        os.makedirs(os.path.dirname(self.path(key)), exist_ok=True)
        with open(self.path(key), "wb") as f:
            f.write(data)

    def read(self, key):
        with open(self.path(key), "rb") as f:
            return f.read()

    def exists(self, key, bucket=BUCKET):
        """A file, or a directory (a key prefix ending in `/`)."""
        return os.path.exists(self.path(key.rstrip("/"), bucket))

    def keys(self):
        root = os.path.join(ORIGIN, BUCKET)
        out = []
        for d, _, files in os.walk(root):
            out += [os.path.relpath(os.path.join(d, f), root) for f in files]
        return out


class S3Origin:
    """An S3 origin `s3://bucket/prefix`: bucket `b` is the keys under
    `prefix/b/`."""

    def __init__(self):
        self.bucket, _, self.prefix = ORIGIN[len("s3://"):].partition("/")
        self.s3 = client(os.environ["ORIGIN_ENDPOINT"], os.environ["ORIGIN_KEY"], os.environ["ORIGIN_SECRET"])

    def key(self, key, bucket=BUCKET):
        return "/".join(p for p in (self.prefix, bucket, key) if p)

    def write(self, key, data):
        self.s3.put_object(Bucket=self.bucket, Key=self.key(key), Body=data)

    def read(self, key):
        return self.s3.get_object(Bucket=self.bucket, Key=self.key(key))["Body"].read()

    def exists(self, key, bucket=BUCKET):
        r = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=self.key(key, bucket), MaxKeys=1)
        return r["KeyCount"] > 0

    def keys(self):
        base = self.key("") + "/"
        out = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=base):
            out += [o["Key"][len(base):] for o in page.get("Contents", [])]
        return [k for k in out if not k.endswith(".coopcache-dir")]


store = S3Origin() if ORIGIN.startswith("s3://") else DirOrigin()
origin = store.read

# The bucket: a large file, names whose order differs from a directory
# walk's (`a-1` before `a/`), a name with a space and a `+`, and enough
# keys for several pages.
rnd = random.Random(1)
store.write("big.bin", rnd.randbytes(3_500_000))
for k in ("tree/a b+c.txt", "tree/a-1", "tree/z", "tree/a/x", "tree/a/y", "tree/b/q"):
    store.write(k, k.encode())
for i in range(20):
    store.write(f"many/{i:02}", rnd.randbytes(1000 + i))

a, b, c = (client(e) for e in ENDPOINTS)

# Buckets are the origin's top-level directories.
names = [x["Name"] for x in a.list_buckets()["Buckets"]]
assert BUCKET in names, names
a.head_bucket(Bucket=BUCKET)
assert code(lambda: a.head_bucket(Bucket="no-such-bucket")) in ("404", "NoSuchBucket")

# Listing: every key of the origin in S3's order, paged, with and without
# a delimiter; keys with spaces and `+` survive boto3's URL encoding.
want = sorted(store.keys(), key=lambda k: k.encode())
got, token = [], None
pages = 0
while True:
    kw = {"Bucket": BUCKET, "MaxKeys": 7}
    if token:
        kw["ContinuationToken"] = token
    r = b.list_objects_v2(**kw)
    pages += 1
    got += [o["Key"] for o in r.get("Contents", [])]
    if not r["IsTruncated"]:
        break
    token = r["NextContinuationToken"]
assert got == want, (got, want)
assert pages == (len(want) + 6) // 7, pages
r = b.list_objects_v2(Bucket=BUCKET, Delimiter="/", Prefix="tree/")
assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["tree/a/", "tree/b/"], r
assert [o["Key"] for o in r["Contents"]] == ["tree/a b+c.txt", "tree/a-1", "tree/z"], r
v1, marker = [], ""
while True:
    r = c.list_objects(Bucket=BUCKET, Prefix="tree/", MaxKeys=2, Marker=marker)
    v1 += [o["Key"] for o in r.get("Contents", [])]
    if not r["IsTruncated"]:
        break
    marker = r.get("NextMarker") or v1[-1]
assert v1 == [k for k in want if k.startswith("tree/")], v1

# Reads, whole and in ranges, from every node.
big = origin("big.bin")
for s in (a, b, c):
    assert s.get_object(Bucket=BUCKET, Key="big.bin")["Body"].read() == big
    for rng, lo, hi in (("bytes=0-0", 0, 1), ("bytes=100000-299999", 100000, 300000),
                        ("bytes=-1000", len(big) - 1000, len(big)), ("bytes=3000000-", 3000000, len(big))):
        r = s.get_object(Bucket=BUCKET, Key="big.bin", Range=rng)
        assert r["Body"].read() == big[lo:hi], rng
        assert r["ContentRange"] == f"bytes {lo}-{hi - 1}/{len(big)}", r["ContentRange"]
assert code(lambda: a.get_object(Bucket=BUCKET, Key="big.bin", Range=f"bytes={len(big)}-")) == "InvalidRange"
assert code(lambda: a.get_object(Bucket=BUCKET, Key="missing")) == "NoSuchKey"
assert code(lambda: a.get_object(Bucket="no-such-bucket", Key="x")) == "NoSuchBucket"

# Preconditions.
etag = a.head_object(Bucket=BUCKET, Key="big.bin")["ETag"]
assert code(lambda: a.get_object(Bucket=BUCKET, Key="big.bin", IfNoneMatch=etag)) == "304"
assert code(lambda: a.get_object(Bucket=BUCKET, Key="big.bin", IfMatch='"other"')) == "PreconditionFailed"
assert a.get_object(Bucket=BUCKET, Key="big.bin", IfMatch=etag)["ContentLength"] == len(big)

# A put on one node is read on the others, and is the origin's file.
body = os.urandom(300_000)
r = a.put_object(Bucket=BUCKET, Key="new/put.bin", Body=body)
assert r["ETag"] == '"%s"' % hashlib.md5(body).hexdigest(), r["ETag"]
assert origin("new/put.bin") == body
for s in (a, b, c):
    assert s.get_object(Bucket=BUCKET, Key="new/put.bin")["Body"].read() == body
# The put's ETag (its MD5) is the object's from then on, in HEAD and in
# listings, on every node.
for s in (a, b, c):
    assert s.head_object(Bucket=BUCKET, Key="new/put.bin")["ETag"] == r["ETag"]
listed = a.list_objects_v2(Bucket=BUCKET, Prefix="new/")["Contents"]
assert [(o["Key"], o["ETag"]) for o in listed] == [("new/put.bin", r["ETag"])], listed
if isinstance(store, DirOrigin):
    # A directory origin keeps a put's content type and user metadata
    # (an S3 origin: not yet, docs/guide/s3.md).
    c.put_object(Bucket=BUCKET, Key="new/typed.json", Body=b"{}", ContentType="application/json",
                 Metadata={"Owner": "team-a", "run": "42"})
    h = b.head_object(Bucket=BUCKET, Key="new/typed.json")
    assert h["ContentType"] == "application/json", h
    assert h["Metadata"] == {"owner": "team-a", "run": "42"}, h["Metadata"]
    assert a.get_object(Bucket=BUCKET, Key="new/typed.json")["Metadata"] == {"owner": "team-a", "run": "42"}
    a.copy_object(Bucket=BUCKET, Key="new/typed2.json", CopySource={"Bucket": BUCKET, "Key": "new/typed.json"})
    assert a.head_object(Bucket=BUCKET, Key="new/typed2.json")["Metadata"] == {"owner": "team-a", "run": "42"}
    a.copy_object(Bucket=BUCKET, Key="new/typed2.json", CopySource={"Bucket": BUCKET, "Key": "new/typed.json"},
                  MetadataDirective="REPLACE", Metadata={"k": "v"}, ContentType="text/plain")
    h = a.head_object(Bucket=BUCKET, Key="new/typed2.json")
    assert (h["Metadata"], h["ContentType"]) == ({"k": "v"}, "text/plain"), h
    # Rewritten outside S3 (as a mount or a program would): the kept MD5,
    # type and metadata are of other bytes, and are not shown.
    with open(store.path("new/typed.json"), "w") as f:
        f.write('{"changed": true}')
    h = b.head_object(Bucket=BUCKET, Key="new/typed.json")
    assert "owner" not in h["Metadata"] and h["ContentType"] != "application/json", h
    assert code(lambda: a.put_object(Bucket=BUCKET, Key="big-meta", Body=b"x", Metadata={"m": "x" * 3000})) == "MetadataTooLarge"
    for k in ("new/typed.json", "new/typed2.json"):
        a.delete_object(Bucket=BUCKET, Key=k)
body2 = os.urandom(200_000)
b.put_object(Bucket=BUCKET, Key="new/put.bin", Body=body2)
for s in (a, b, c):
    assert s.get_object(Bucket=BUCKET, Key="new/put.bin")["Body"].read() == body2
assert code(lambda: a.put_object(Bucket=BUCKET, Key="x.bin", Body=b"abc", ContentMD5="AAAAAAAAAAAAAAAAAAAAAA==")) == "BadDigest"
assert not store.exists("x.bin")
assert code(lambda: a.put_object(Bucket="no-such-bucket", Key="x", Body=b"x")) == "NoSuchBucket"

# Multipart (boto3's transfer manager: 5 MiB parts, several at once).
large = os.urandom(17 * 1024 * 1024 + 123)
with open("large.bin", "wb") as f:
    f.write(large)
cfg = TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20, max_concurrency=4)
b.upload_file("large.bin", BUCKET, "mp/large.bin", Config=cfg)
assert origin("mp/large.bin") == large
assert c.get_object(Bucket=BUCKET, Key="mp/large.bin")["Body"].read() == large
up = a.create_multipart_upload(Bucket=BUCKET, Key="mp/aborted.bin")["UploadId"]
a.upload_part(Bucket=BUCKET, Key="mp/aborted.bin", UploadId=up, PartNumber=1, Body=b"x" * 100)
parts = a.list_parts(Bucket=BUCKET, Key="mp/aborted.bin", UploadId=up)["Parts"]
assert [(p["PartNumber"], p["Size"]) for p in parts] == [(1, 100)], parts
a.abort_multipart_upload(Bucket=BUCKET, Key="mp/aborted.bin", UploadId=up)
assert code(lambda: a.list_parts(Bucket=BUCKET, Key="mp/aborted.bin", UploadId=up)) == "NoSuchUpload"
assert not store.exists("mp/aborted.bin")
up = a.create_multipart_upload(Bucket=BUCKET, Key="mp/small.bin")["UploadId"]
e1 = a.upload_part(Bucket=BUCKET, Key="mp/small.bin", UploadId=up, PartNumber=1, Body=b"x" * 100)["ETag"]
e2 = a.upload_part(Bucket=BUCKET, Key="mp/small.bin", UploadId=up, PartNumber=2, Body=b"y" * 100)["ETag"]
done = {"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]}
assert code(lambda: a.complete_multipart_upload(Bucket=BUCKET, Key="mp/small.bin", UploadId=up, MultipartUpload=done)) == "EntityTooSmall"

# Copy, then delete: gone on every node and in the origin, and the
# directories the put made go with it.
c.copy_object(Bucket=BUCKET, Key="new/copy.bin", CopySource={"Bucket": BUCKET, "Key": "mp/large.bin"})
assert origin("new/copy.bin") == large
assert a.get_object(Bucket=BUCKET, Key="new/copy.bin")["Body"].read() == large
for k in ("new/copy.bin", "new/put.bin", "mp/large.bin"):
    a.delete_object(Bucket=BUCKET, Key=k)
    for s in (a, b, c):
        assert code(lambda: s.get_object(Bucket=BUCKET, Key=k)) == "NoSuchKey", k
assert not store.exists("new/")
a.delete_object(Bucket=BUCKET, Key="never-was")  # S3: no error
r = a.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": "tree/z"}, {"Key": "none"}]})
assert sorted(d["Key"] for d in r["Deleted"]) == ["none", "tree/z"], r
assert not store.exists("tree/z")

# Presigned URLs, GET and PUT, by a client that knows nothing of S3.
url = a.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "big.bin"}, ExpiresIn=60)
assert urllib.request.urlopen(url).read() == big
# boto3 presigns with Signature V2 by default, which signs Content-Type:
# the PUT sends the one it was signed with (none).
url = a.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "presigned.txt"}, ExpiresIn=60)
put = urllib.request.Request(url, data=b"signed elsewhere", method="PUT", headers={"Content-Type": ""})
urllib.request.urlopen(put).read()
assert origin("presigned.txt") == b"signed elsewhere"
v4 = client(ENDPOINTS[1], signature_version="s3v4")
url = v4.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "presigned.txt"}, ExpiresIn=60)
assert "X-Amz-Signature=" in url, url
assert urllib.request.urlopen(url).read() == b"signed elsewhere"
sig = url.split("X-Amz-Signature=")[1][:64]
bad = url.replace(sig, sig[:-1] + ("0" if sig[-1] != "0" else "1"))
try:
    urllib.request.urlopen(bad)
    raise AssertionError("a tampered presigned URL was accepted")
except urllib.error.HTTPError as e:
    assert e.code == 403, e.code

# Buckets made and removed; a bucket with keys is not removed.
a.create_bucket(Bucket="fresh")
assert code(lambda: a.create_bucket(Bucket="fresh")) in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists")
a.put_object(Bucket="fresh", Key="k", Body=b"v")
assert code(lambda: a.delete_bucket(Bucket="fresh")) == "BucketNotEmpty"
a.delete_object(Bucket="fresh", Key="k")
a.delete_bucket(Bucket="fresh")
assert not store.exists("", bucket="fresh")

# Who may do what: wrong secrets, unknown keys and unsigned requests are
# refused, and write nothing.
assert code(lambda: client(ENDPOINTS[0], secret="wrong-secret").list_buckets()) == "SignatureDoesNotMatch"
assert code(lambda: client(ENDPOINTS[0], key="nobody", secret="whatever1").list_buckets()) == "InvalidAccessKeyId"
anon = boto3.client("s3", endpoint_url=ENDPOINTS[1], region_name="us-east-1",
                    config=Config(signature_version=botocore.UNSIGNED, s3={"addressing_style": "path"}))
assert code(lambda: anon.get_object(Bucket=BUCKET, Key="big.bin")) == "AccessDenied"
assert code(lambda: anon.put_object(Bucket=BUCKET, Key="anon.txt", Body=b"x")) == "AccessDenied"
assert not store.exists("anon.txt")
try:
    urllib.request.urlopen(urllib.request.Request(ENDPOINTS[2] + "/data/anon.txt", data=b"x", method="PUT"))
    raise AssertionError("an unsigned PUT was accepted")
except urllib.error.HTTPError as e:
    assert e.code == 403, e.code
    assert e.headers["x-amz-request-id"], dict(e.headers)

print("boto3: ok")
