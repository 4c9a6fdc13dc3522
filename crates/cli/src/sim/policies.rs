//! `--policy`: a comma-separated list of policies with knobs, split outside
//! parentheses so `s3fifo(small=0.2,ghost=0.5),lru` is two policies.

use anyhow::{Result, bail};
use coopcache_core::admission::{AdmissionError, AdmissionSpec};
use coopcache_core::policy::{PolicyKind, PolicySpec, SpecError, split_top_level};
use std::str::FromStr;

/// Knobs of each policy that has any, and admission, for `--help` (a
/// macro, so `concat!` can splice it into a command's help).
macro_rules! knobs_help {
    () => {
        "\
Policy knobs (libCacheSim's parameter in brackets; defaults):
  s3fifo, s3fifo-v1  small=0.1 [small-size-ratio], ghost=0.9 [ghost-size-ratio],
                     move=2 [move-to-main-threshold]
  2q                 ain=0.25 [Ain-size-ratio], aout=0.5 [Aout-size-ratio]
  slru               segments=4 [n-seg]
  clock              bits=1 [n-bit-counter], init=0 [init-freq]
  wtinylfu           window=0.01 [window-size]
  clockpro           min_cold=0.01, max_cold=0.99, cold_floor=2, non_resident=1 (no libCacheSim
                     equivalent: Caffeine's percent-min-resident-cold, percent-max-resident-cold,
                     lower-bound-resident-cold, non-resident-multiplier)
  random, hyperbolic seed=... (coopcache's own: libCacheSim's generator is global)
  e.g. --policy 's3fifo(small=0.2,ghost=0.5),2q(ain=0.3),lru'; a knob left out keeps its default,
  and a run is labelled in the canonical form, defaults omitted (`s3fifo(small=0.2)`).

Admission (--admission, crossed with --policy; libCacheSim's -a; runs labelled `lru+bloom`):
  none       every missed object is cached (default)
  bloom      cache an object on its second request (libCacheSim bloomfilter: an exact set of ids
             seen, never cleared)
  size       below=N [size]: cache only objects smaller than N bytes (64KiB, 1MiB)
  adaptsize  iterations=15 [max-iteration], interval=30000 [reconf-interval], seed: admit an object
             of size s with probability e^(-s/c), c retuned each interval by AdaptSize's model
  Consulted only on a miss, in byte and block caches (every block has size 1); a policy may also
  carry its own: --policy 'lru+size(below=1MiB)'. Not for cooperative runs.
"
    };
}
pub(crate) use knobs_help;

/// The policies of one `--policy` list, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyList(pub Vec<PolicySpec>);

impl FromStr for PolicyList {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        split_top_level(s, ',')
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map(PolicyList)
    }
}

/// The one bare policy a cooperative run's nodes use: knobs are refused
/// rather than ignored, as the cluster builds its caches by kind.
pub(crate) fn bare_policy(specs: &[PolicySpec]) -> Result<PolicyKind> {
    let [spec] = specs else {
        bail!(
            "with --algorithms give one --policy for the nodes' local caches, not {}",
            specs.len()
        );
    };
    if !spec.is_default() {
        bail!(
            "--policy {spec}: a cooperative run's nodes take a bare policy name ({}), not knobs or admission; those apply to local-policy replays",
            spec.kind()
        );
    }
    Ok(spec.kind())
}

/// The admission policies of one `--admission` list, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct AdmissionList(pub Vec<AdmissionSpec>);

impl FromStr for AdmissionList {
    type Err = AdmissionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        split_top_level(s, ',')
            .into_iter()
            .filter(|a| !a.trim().is_empty())
            .map(|a| {
                let (name, knobs) = match a.split_once('(') {
                    Some((name, rest)) => (name, rest.trim_end().trim_end_matches(')')),
                    None => (a, ""),
                };
                AdmissionSpec::parse(name, knobs)
            })
            .collect::<Result<_, _>>()
            .map(AdmissionList)
    }
}

impl AdmissionList {
    /// Whether any admission policy is named (other than `none`).
    pub(crate) fn any(&self) -> bool {
        self.0.iter().any(|a| !a.is_none())
    }

    /// Every policy crossed with every admission policy, policy-major; an
    /// empty list leaves the policies as they are.
    pub(crate) fn cross(&self, policies: &[PolicySpec]) -> Vec<PolicySpec> {
        if self.0.is_empty() {
            return policies.to_vec();
        }
        policies
            .iter()
            .flat_map(|&p| {
                self.0.iter().map(move |&a| match a {
                    AdmissionSpec::None => p,
                    a => p.with_admission(a),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas_inside_parentheses_stay_with_their_policy() {
        let list: PolicyList = "s3fifo(small=0.2,ghost=0.5),lru".parse().unwrap();
        let names: Vec<String> = list.0.iter().map(|p| p.to_string()).collect();
        assert_eq!(names, ["s3fifo(small=0.2,ghost=0.5)", "lru"]);
    }

    #[test]
    fn a_cooperative_run_refuses_knobs() {
        let list: PolicyList = "s3fifo(small=0.2)".parse().unwrap();
        let err = bare_policy(&list.0).unwrap_err().to_string();
        assert!(
            err.contains("bare policy name (s3fifo), not knobs"),
            "{err}"
        );
        let list: PolicyList = "s3fifo".parse().unwrap();
        assert_eq!(bare_policy(&list.0).unwrap(), PolicyKind::S3Fifo);
        let list: PolicyList = "lru+bloom".parse().unwrap();
        let err = bare_policy(&list.0).unwrap_err().to_string();
        assert!(err.contains("not knobs or admission"), "{err}");
    }

    #[test]
    fn admissions_cross_the_policies() {
        let policies: PolicyList = "lru,s3fifo(small=0.2)".parse().unwrap();
        let admissions: AdmissionList = "none,bloom,size(below=1MiB)".parse().unwrap();
        let names: Vec<String> = admissions
            .cross(&policies.0)
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(
            names,
            [
                "lru",
                "lru+bloom",
                "lru+size(below=1MiB)",
                "s3fifo(small=0.2)",
                "s3fifo(small=0.2)+bloom",
                "s3fifo(small=0.2)+size(below=1MiB)"
            ]
        );
        let err = "blom".parse::<AdmissionList>().unwrap_err().to_string();
        assert!(err.contains("unknown admission policy `blom`"), "{err}");
    }
}
