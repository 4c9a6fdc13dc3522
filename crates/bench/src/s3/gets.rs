//! `bench s3`'s GETs/s phase: small objects, each already read once
//! through every endpoint (so every node holds them), fetched at random
//! by many concurrent clients for a fixed time, through coopcache's
//! endpoints (clients spread over the nodes) and from MinIO.

use super::{Cluster, KEY, Row, S3BenchArgs, SECRET, System};
use crate::common::rng;
use crate::s3_servers::S3Endpoint;
use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use object_store::aws::AmazonS3;
use object_store::path::Path as Key;
use rand::Rng;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Where the small objects go in MinIO's bucket (a bucket of the
/// endpoint, which serves the bucket's top-level prefixes as buckets).
const SMALL: &str = "coopcache-bench-small";

pub(super) async fn phase(
    args: &S3BenchArgs,
    dir: &Path,
    minio: &S3Endpoint,
    store: &AmazonS3,
) -> Result<Vec<Row>> {
    let mut objects = Vec::new();
    for i in 0..args.small_objects {
        let mut bytes = vec![0u8; usize::try_from(args.small_size)?];
        rng(args.seed.value, 50_000 + u64::from(i)).fill(&mut bytes[..]);
        objects.push(bytes);
    }
    eprintln!("s3: {} small objects ...", objects.len());
    futures::stream::iter(objects.iter().enumerate())
        .map(|(i, bytes)| async move {
            let key = Key::from(format!("{SMALL}/{}", name(i)));
            store
                .put(&key, bytes.clone().into())
                .await
                .with_context(|| format!("uploading {key}"))
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    let objects = Arc::new(objects);
    let mut rows = Vec::new();

    let cluster = Cluster::start(args, &dir.join("gets"), minio).await?;
    let stores: Result<Vec<AmazonS3>> = cluster
        .urls
        .iter()
        .map(|url| {
            S3Endpoint {
                url: url.clone(),
                user: KEY.into(),
                password: SECRET.into(),
                bucket: SMALL.into(),
            }
            .store()
        })
        .collect();
    let stores: Vec<Arc<AmazonS3>> = stores?.into_iter().map(Arc::new).collect();
    // Every node reads every object once: from then on each is cached.
    for s in &stores {
        for i in 0..objects.len() {
            s.get(&Key::from(name(i))).await?.bytes().await?;
        }
    }
    let measured = measure(args, System::Coopcache, &stores, "", &objects, minio).await;
    cluster.stop();
    rows.push(measured?);

    let direct = vec![Arc::new(minio.store()?)];
    let prefix = format!("{SMALL}/");
    rows.push(measure(args, System::Minio, &direct, &prefix, &objects, minio).await?);
    Ok(rows)
}

fn name(i: usize) -> String {
    format!("s{i:06}")
}

/// `args.clients` clients GET random objects through `stores` (client
/// `c` through `stores[c % len]`) for `args.gets_for`.
async fn measure(
    args: &S3BenchArgs,
    system: System,
    stores: &[Arc<AmazonS3>],
    prefix: &str,
    objects: &Arc<Vec<Vec<u8>>>,
    minio: &S3Endpoint,
) -> Result<Row> {
    let gets = Arc::new(AtomicU64::new(0));
    let wrong = Arc::new(AtomicU64::new(0));
    let sent = minio.sent_bytes().await?;
    let started = Instant::now();
    let until = started + args.gets_for;
    let mut tasks = Vec::new();
    for c in 0..args.clients as usize {
        let store = stores[c % stores.len()].clone();
        let (objects, gets, wrong) = (objects.clone(), gets.clone(), wrong.clone());
        let prefix = prefix.to_owned();
        let mut draw = rng(args.seed.value, 90_000 + c as u64);
        tasks.push(tokio::spawn(async move {
            while Instant::now() < until {
                let i = draw.random_range(0..objects.len());
                let got = store
                    .get(&Key::from(format!("{prefix}{}", name(i))))
                    .await?
                    .bytes()
                    .await?;
                if got[..] != objects[i][..] {
                    wrong.fetch_add(objects[i].len() as u64, Ordering::Relaxed);
                }
                gets.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, object_store::Error>(())
        }));
    }
    for t in tasks {
        t.await?
            .with_context(|| format!("a GET through {}", system.name()))?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let n = gets.load(Ordering::Relaxed);
    let origin_bytes = minio.sent_bytes().await?.saturating_sub(sent);
    Ok(Row {
        phase: "gets",
        system: system.name(),
        step: format!(
            "{}: {} clients, {} B objects",
            system.name(),
            args.clients,
            args.small_size
        ),
        bytes: n * args.small_size,
        seconds,
        rate: n as f64 / seconds.max(f64::MIN_POSITIVE),
        origin_bytes,
        wrong_bytes: wrong.load(Ordering::Relaxed),
        target: None,
        met: None,
    })
}
