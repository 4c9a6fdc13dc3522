"""One boto3 reader of `coopcache bench s3`: reads every object of a
dataset once, in an order of its own, as a training job's data loader
would, and checks each against its SHA-256. Prints one JSON line.

Arguments: ENDPOINT BUCKET PREFIX ACCESS_KEY SECRET DIGESTS_JSON ORDER_SEED
"""

import hashlib
import json
import random
import sys
import time

import boto3
from botocore.config import Config

endpoint, bucket, prefix, key, secret, digests, seed = sys.argv[1:8]
with open(digests) as f:
    want = json.load(f)
s3 = boto3.client(
    "s3",
    endpoint_url=endpoint,
    aws_access_key_id=key,
    aws_secret_access_key=secret,
    region_name="us-east-1",
    config=Config(s3={"addressing_style": "path"}),
)
names = sorted(want)
random.Random(int(seed)).shuffle(names)
total = wrong = 0
started = time.monotonic()
for name in names:
    body = s3.get_object(Bucket=bucket, Key=prefix + name)["Body"].read()
    total += len(body)
    if hashlib.sha256(body).hexdigest() != want[name]:
        wrong += len(body)
print(json.dumps({"bytes": total, "wrong_bytes": wrong, "seconds": time.monotonic() - started}))
