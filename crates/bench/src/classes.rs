//! `coopcache bench classes`: the request-distribution paper's headline,
//! live. Its WebStone-like web workload (`coopcache sim --workload web`'s
//! generator: four size classes, Zipf popularity within each, documents
//! dispatched round-robin to the serving nodes) is read whole, document by
//! document, through each node's HTTP gateway, under each size-class
//! policy in turn on a fresh two-node N-Chance cluster, next to the
//! simulator's prediction for the same block reads (N-Chance's model as a
//! live cluster runs it: managers without memory, forwarded blocks
//! evicted first, the same per-class policies).
//!
//! One document at a time, so that the live cluster sees the requests in
//! the simulator's order and its origin reads can be held against the
//! prediction; throughput is therefore one reader's, bound by latency.

use crate::classes_report::{Row, plot, print_table};
use crate::common::{Bar, Counters, in_tempdir, report_rows, rng, write_origin_file, wrong_bytes};
use crate::loopback::{LoopbackSpec, shutdown, start_cluster};
use anyhow::{Context, Result, bail};
use coopcache_console::args::{ReportArgs, parse_duration, parse_size};
use coopcache_core::coop::{
    AlgorithmKind, ClassPolicies, ClassPolicy, ClusterConfig, Level, SizeClassed, class_key,
    live_classes,
};
use coopcache_sim::coop::stepwise::stepwise;
use coopcache_sim::trace::{Op, Request};
use coopcache_sim::workload::WebStone;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// This bench's workload: about 100 MB of documents (the paper's shape at
/// a tenth of its size) and 8 KiB blocks.
const DEFAULT_PARAMS: &str =
    "requests=40000,docs0=2000,docs1=2000,docs2=500,docs3=100,block_size=8192";

#[derive(clap::Args)]
pub struct ClassesArgs {
    /// Size-class policy files (TOML, docs/class-policies.md), one run
    /// each; by default three built in: `nchance` (one class: plain
    /// N-Chance, the general-purpose cooperative cache), `fwd-01` (only
    /// classes 0 and 1 forward their evicted singlets) and `cc-23` (classes
    /// 0 and 1 never looked up in a peer's memory).
    #[arg(long, value_delimiter = ',', value_name = "FILE,...")]
    class_policy: Vec<PathBuf>,
    /// `coopcache sim --workload web`'s parameters (key=value,...),
    /// applied after this bench's defaults
    /// (`requests=40000,docs0=2000,docs1=2000,docs2=500,docs3=100,block_size=8192`);
    /// `clients` is the number of nodes.
    #[arg(long, value_name = "KEY=VALUE,...")]
    workload_params: Option<String>,
    /// Bytes of blocks each node caches.
    #[arg(long, default_value = "8MiB", value_parser = parse_size)]
    cache: u64,
    /// Emulated latency of every origin request (the paper's disk).
    #[arg(long, default_value = "1ms", value_parser = parse_duration)]
    origin_delay: Duration,
    #[command(flatten)]
    report: ReportArgs,
}

/// A policy run: its name and classes.
struct Policy {
    name: String,
    classes: ClassPolicies,
}

/// WebStone's classes with `policy(class)` each.
fn webstone(policy: impl Fn(usize) -> ClassPolicy) -> ClassPolicies {
    let mut classes = ClassPolicies::webstone(ClassPolicy::default())
        .classes()
        .to_vec();
    for (i, c) in classes.iter_mut().enumerate() {
        c.policy = policy(i);
    }
    ClassPolicies::new(classes).expect("WebStone's classes are valid")
}

fn builtin() -> Vec<Policy> {
    vec![
        Policy {
            name: "nchance".into(),
            classes: ClassPolicies::uniform(),
        },
        Policy {
            name: "fwd-01".into(),
            classes: webstone(|c| ClassPolicy {
                forward_evictions: c < 2,
                ..ClassPolicy::default()
            }),
        },
        Policy {
            name: "cc-23".into(),
            classes: webstone(|c| ClassPolicy {
                cooperative: c >= 2,
                ..ClassPolicy::default()
            }),
        },
    ]
}

/// The policies asked for, each checked as a node checks it.
fn policies(args: &ClassesArgs) -> Result<Vec<Policy>> {
    if args.class_policy.is_empty() {
        return Ok(builtin());
    }
    args.class_policy
        .iter()
        .map(|path| {
            let classes = coopcache_sim::class_file::read_class_policies(path)?;
            live_classes(AlgorithmKind::NChance, &classes)
                .with_context(|| format!("--class-policy {}", path.display()))?;
            let name = path.file_stem().map_or_else(
                || path.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            );
            Ok(Policy { name, classes })
        })
        .collect()
}

/// A document of the workload: its origin path and size.
struct Doc {
    path: String,
    size: u64,
}

/// The documents and, in order, which node reads which document.
pub(crate) struct Workload {
    docs: Vec<Doc>,
    /// Document and node, one per whole-document read.
    pub(crate) reads: Vec<(usize, u32)>,
    /// Serving nodes.
    pub(crate) nodes: u32,
    block_size: u32,
}

/// Doc number and block index in a web request's id.
fn doc_of(id: u64) -> u64 {
    (id & ((1 << 61) - 1)) >> 24
}

/// The web workload, as whole-document reads.
fn workload(args: &ClassesArgs) -> Result<Workload> {
    let mut web = WebStone::default();
    let params = match &args.workload_params {
        Some(p) => format!("{DEFAULT_PARAMS},{p}"),
        None => DEFAULT_PARAMS.into(),
    };
    for kv in params.split(',').filter(|s| !s.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--workload-params: `{kv}`: expected KEY=VALUE"))?;
        web.set(k, v)?;
    }
    let block_size = u32::try_from(web.block_size)
        .ok()
        .filter(|b| b.is_power_of_two() && (512..=4 << 20).contains(b))
        .with_context(|| {
            format!(
                "--workload-params block_size={}: a live node takes a power of two from 512 B to 4 MiB",
                web.block_size
            )
        })?;
    if !(1..=64).contains(&web.clients) {
        bail!(
            "--workload-params clients={}: expected 1 to 64 nodes",
            web.clients
        );
    }
    // Consecutive requests of one document (and one `time`) are one
    // read; a document's size is the sum of its blocks' bytes.
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut docs: Vec<Doc> = Vec::new();
    let mut reads: Vec<(usize, u32)> = Vec::new();
    let mut last = None;
    let mut size = 0u64;
    for r in web.generate() {
        let key = (doc_of(r.id), r.time);
        if last != Some(key) {
            size = 0;
            let n = docs.len();
            let d = *index.entry(key.0).or_insert(n);
            if d == n {
                docs.push(Doc {
                    path: format!("class{}/{:06}.html", r.id.size_class(), key.0),
                    size: 0,
                });
            }
            reads.push((d, r.client));
            last = Some(key);
        }
        size += u64::from(r.size);
        let d = reads.last().map(|r| r.0).unwrap_or_default();
        docs[d].size = docs[d].size.max(size);
    }
    Ok(Workload {
        docs,
        reads,
        nodes: web.clients,
        block_size,
    })
}

/// The block reads of `w` under `classes`, as the simulator replays them:
/// each document's blocks in order, keyed by the class of its size.
fn block_requests(w: &Workload, classes: &ClassPolicies) -> Vec<Request> {
    let bs = u64::from(w.block_size);
    let mut out = Vec::new();
    for (t, &(d, node)) in w.reads.iter().enumerate() {
        let size = w.docs[d].size;
        let class = classes.class_of_size(size);
        for index in 0..size.div_ceil(bs).max(1) {
            out.push(Request {
                id: class_key(class, ((d as u64) << 24) | index).unwrap_or_default(),
                time: t as u64,
                size: w.block_size,
                client: node,
                op: Op::Read,
            });
        }
    }
    out
}

/// The simulator's origin and peer reads for `w` under `classes`.
fn predict(w: &Workload, classes: &ClassPolicies, blocks: usize) -> Result<(u64, u64)> {
    let config = ClusterConfig {
        nodes: w.nodes,
        node_capacity: blocks,
        chances: 2,
        seed: 1,
        classes: classes.clone(),
        ..ClusterConfig::paper(w.nodes)
    };
    let kind = AlgorithmKind::NChance;
    let steps = stepwise(
        kind,
        &kind.live_config(&config)?,
        &block_requests(w, classes),
        false,
    )?;
    let at = |l: Level| steps.iter().filter(|s| s.level == l).count() as u64;
    Ok((at(Level::Origin), at(Level::RemoteNode)))
}

pub(crate) fn run(args: ClassesArgs) -> Result<()> {
    let policies = policies(&args)?;
    let w = workload(&args)?;
    if args.cache < u64::from(w.block_size) * 16 {
        bail!(
            "--cache {}: expected at least 16 blocks of {} B",
            args.cache,
            w.block_size
        );
    }
    let rows = in_tempdir("coopcache-bench-classes-", |dir| {
        bench(&args, &w, &policies, dir)
    })?;
    report_rows(
        args.report.json,
        &rows,
        print_table,
        args.report.plot.as_deref(),
        plot,
        |r| r.wrong_bytes,
    )
}

async fn bench(
    args: &ClassesArgs,
    w: &Workload,
    policies: &[Policy],
    dir: PathBuf,
) -> Result<Vec<Row>> {
    let origin = dir.join("origin");
    let mut bytes = rng(1, 1);
    let contents: Vec<Arc<Vec<u8>>> = w
        .docs
        .iter()
        .map(|d| {
            let (sub, name) = d.path.split_once('/').unwrap_or((".", &d.path));
            Ok(Arc::new(write_origin_file(
                &origin.join(sub),
                name,
                d.size,
                &mut bytes,
            )?))
        })
        .collect::<Result<_>>()?;
    let total: u64 = w.docs.iter().map(|d| d.size).sum();
    eprintln!(
        "classes: {} ({:.1} MiB), {} whole-document reads over {} nodes, {} B blocks, {:.1} MiB cache each, {:?} per origin request",
        coopcache_console::output::count(w.docs.len() as u64, "document"),
        total as f64 / 1048576.0,
        w.reads.len(),
        w.nodes,
        w.block_size,
        args.cache as f64 / 1048576.0,
        args.origin_delay
    );
    let blocks = (args.cache / u64::from(w.block_size)) as usize;
    let mut rows = Vec::new();
    for (i, p) in policies.iter().enumerate() {
        let (predicted_origin, predicted_peer) = predict(w, &p.classes, blocks)?;
        // By position: two policy files may share a name.
        let keys = dir.join(format!("run-{i}"));
        let mut spec = LoopbackSpec::new(&keys, w.nodes, origin.clone())?;
        spec.origin_delay = args.origin_delay;
        spec.block_size = w.block_size;
        spec.classes = p.classes.clone();
        let nodes = start_cluster(&spec, &vec![args.cache; w.nodes as usize]).await?;
        let result = policy_run(w, &nodes, &contents, &p.name).await;
        shutdown(&nodes);
        let (counters, seconds, wrong) = result?;
        rows.push(Row::new(
            &p.name,
            w,
            total_read(w),
            &counters,
            seconds,
            wrong,
            (predicted_origin, predicted_peer),
        ));
    }
    Ok(rows)
}

/// Bytes of every document read.
fn total_read(w: &Workload) -> u64 {
    w.reads.iter().map(|&(d, _)| w.docs[d].size).sum()
}

/// Reads `w` through a gateway on each of `nodes`: the counters of the
/// run, its seconds and the wrong bytes.
async fn policy_run(
    w: &Workload,
    nodes: &[Arc<coopcache_node::NodeHandle>],
    contents: &[Arc<Vec<u8>>],
    name: &str,
) -> Result<(Counters, f64, u64)> {
    let mut clients = Vec::new();
    let mut gateways = Vec::new();
    for node in nodes {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let node = node.clone();
        gateways.push(tokio::spawn(async move {
            let opts = coopcache_node::gateway::GatewayOptions::default();
            coopcache_node::gateway::serve(listener, node, &opts).await
        }));
        clients.push(coopcache_node::client::Client::new(&addr.to_string()));
    }
    let before = Counters::sum(nodes).await?;
    let bar = Bar::new(w.reads.len() as u64, name);
    let started = Instant::now();
    let mut wrong = 0;
    let mut result = Ok(());
    for &(d, node) in &w.reads {
        match clients[node as usize].read(&w.docs[d].path, None).await {
            Ok(got) => wrong += wrong_bytes(&got, &contents[d]),
            Err(e) => {
                result = Err(anyhow::anyhow!("reading {}: {e}", w.docs[d].path));
                break;
            }
        }
        bar.inc();
    }
    let seconds = started.elapsed().as_secs_f64();
    for g in gateways {
        g.abort();
    }
    result?;
    Ok((Counters::sum(nodes).await?.since(&before), seconds, wrong))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(params: &str) -> ClassesArgs {
        ClassesArgs {
            class_policy: Vec::new(),
            workload_params: Some(params.into()),
            cache: 1 << 20,
            origin_delay: Duration::ZERO,
            report: ReportArgs {
                plot: None,
                json: false,
            },
        }
    }

    #[test]
    fn documents_are_read_whole_in_the_generators_order() {
        let w = workload(&args("requests=3000,docs0=50,docs1=50,docs2=20,docs3=5")).unwrap();
        assert!(w.reads.len() > 100, "{}", w.reads.len());
        // Round-robin over the two nodes, a document at a time.
        for (i, &(_, node)) in w.reads.iter().enumerate() {
            assert_eq!(node, i as u32 % 2);
        }
        // Each document in its size's class (the path names it).
        let classes = ClassPolicies::webstone(ClassPolicy::default());
        for d in &w.docs {
            let class = classes.class_of_size(d.size);
            assert!(d.path.starts_with(&format!("class{class}/")), "{}", d.path);
        }
        // The simulator's blocks: one per block of each document read.
        let requests = block_requests(&w, &classes);
        let bs = u64::from(w.block_size);
        let want: u64 = w
            .reads
            .iter()
            .map(|&(d, _)| w.docs[d].size.div_ceil(bs))
            .sum();
        assert_eq!(requests.len() as u64, want);
    }

    #[test]
    fn policies_change_the_prediction_and_bad_settings_are_named() {
        let w = workload(&args(
            "requests=20000,docs0=400,docs1=400,docs2=100,docs3=20",
        ))
        .unwrap();
        let p = builtin();
        let (origin_plain, peer_plain) = predict(&w, &p[0].classes, 128).unwrap();
        let (origin_cc23, peer_cc23) = predict(&w, &p[2].classes, 128).unwrap();
        assert!(peer_cc23 < peer_plain, "{peer_cc23} {peer_plain}");
        assert!(origin_cc23 > origin_plain, "{origin_cc23} {origin_plain}");
        let e = workload(&args("block_size=1000"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("block_size=1000") && e.contains("power of two"),
            "{e}"
        );
        let e = workload(&args("nonsense=1")).err().unwrap().to_string();
        assert!(e.contains("nonsense"), "{e}");
    }
}
