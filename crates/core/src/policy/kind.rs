//! Choosing a policy by name, and building it behind static dispatch.

use super::{
    Arc, Belady, BlockKey, Capacity, Clock, ClockPro, Fifo, Gdsf, Hyperbolic, LeCaR, Lfu, Lfuda,
    Lhd, Lirs, Lru, Mq, Policy, Qdlp, Random, S3Fifo, S3FifoV1, Sieve, Slru, TwoQ, Unit, WTinyLfu,
    Weight,
};
use crate::error::CapacityError;
use std::fmt;
use std::str::FromStr;

/// The replacement policies coopcache implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    /// [`Lru`]
    Lru,
    /// [`Fifo`]
    Fifo,
    /// [`Clock`]
    Clock,
    /// [`Sieve`]
    Sieve,
    /// [`Arc`]
    Arc,
    /// [`S3Fifo`]
    S3Fifo,
    /// [`TwoQ`]
    TwoQ,
    /// [`Lirs`]
    Lirs,
    /// [`Lfu`]
    Lfu,
    /// [`Belady`]: needs the future ([`PolicyKind::needs_future`]).
    Belady,
    /// [`Slru`]
    Slru,
    /// [`S3FifoV1`]: libCacheSim's current `S3FIFO` (`s3fifo` is its
    /// original `S3FIFOv0`).
    S3FifoV1,
    /// [`Random`], drawing from [`RANDOM_SEED`](super::RANDOM_SEED).
    Random,
    /// [`Lfuda`]
    Lfuda,
    /// [`Gdsf`]
    Gdsf,
    /// [`Hyperbolic`]
    Hyperbolic,
    /// [`WTinyLfu`]
    WTinyLfu,
    /// [`Qdlp`]
    Qdlp,
    /// [`Mq`]
    Mq,
    /// [`ClockPro`]
    ClockPro,
    /// [`LeCaR`], drawing libCacheSim's numbers.
    LeCaR,
    /// [`Lhd`], drawing libCacheSim's numbers.
    Lhd,
}

/// Something to do with a freshly built policy, whatever its type.
///
/// [`PolicyKind::build`] calls [`visit`](PolicyVisitor::visit) with the
/// concrete policy, so the caller's code is monomorphised per policy and a
/// replay pays no dynamic dispatch per request.
pub trait PolicyVisitor<K: BlockKey> {
    /// What the visit returns.
    type Output;
    /// Runs with the policy built by [`PolicyKind::build`].
    fn visit<P: Policy<K> + Send + 'static>(self, policy: P) -> Self::Output;
}

/// Something to do with a policy's constructor, whatever the policy's
/// type: build many caches of one policy (a cluster's nodes).
pub trait PolicyFactory<K: BlockKey> {
    /// What the call returns.
    type Output;
    /// Runs with the constructor of the chosen policy.
    fn make<P: Policy<K> + Send + 'static>(
        self,
        new: fn(Capacity) -> Result<P, CapacityError>,
    ) -> Self::Output;
}

/// Adapts a [`PolicyVisitor`] to one cache built by a [`PolicyFactory`].
struct BuildOne<V> {
    capacity: Capacity,
    visitor: V,
}

impl<K: BlockKey, V: PolicyVisitor<K>> PolicyFactory<K> for BuildOne<V> {
    type Output = Result<V::Output, CapacityError>;

    fn make<P: Policy<K> + Send + 'static>(
        self,
        new: fn(Capacity) -> Result<P, CapacityError>,
    ) -> Self::Output {
        Ok(self.visitor.visit(new(self.capacity)?))
    }
}

impl PolicyKind {
    /// Every policy, in the order tables list them.
    pub const ALL: [PolicyKind; 22] = [
        PolicyKind::Lru,
        PolicyKind::Fifo,
        PolicyKind::Clock,
        PolicyKind::Sieve,
        PolicyKind::Arc,
        PolicyKind::S3Fifo,
        PolicyKind::TwoQ,
        PolicyKind::Lirs,
        PolicyKind::Lfu,
        PolicyKind::Belady,
        PolicyKind::Slru,
        PolicyKind::S3FifoV1,
        PolicyKind::Random,
        PolicyKind::Lfuda,
        PolicyKind::Gdsf,
        PolicyKind::Hyperbolic,
        PolicyKind::WTinyLfu,
        PolicyKind::Qdlp,
        PolicyKind::Mq,
        PolicyKind::ClockPro,
        PolicyKind::LeCaR,
        PolicyKind::Lhd,
    ];

    /// The name `FromStr` accepts and reports print.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Lru => "lru",
            PolicyKind::Fifo => "fifo",
            PolicyKind::Clock => "clock",
            PolicyKind::Sieve => "sieve",
            PolicyKind::Arc => "arc",
            PolicyKind::S3Fifo => "s3fifo",
            PolicyKind::TwoQ => "2q",
            PolicyKind::Lirs => "lirs",
            PolicyKind::Lfu => "lfu",
            PolicyKind::Belady => "belady",
            PolicyKind::Slru => "slru",
            PolicyKind::S3FifoV1 => "s3fifo-v1",
            PolicyKind::Random => "random",
            PolicyKind::Lfuda => "lfuda",
            PolicyKind::Gdsf => "gdsf",
            PolicyKind::Hyperbolic => "hyperbolic",
            PolicyKind::WTinyLfu => "wtinylfu",
            PolicyKind::Qdlp => "qdlp",
            PolicyKind::Mq => "mq",
            PolicyKind::ClockPro => "clockpro",
            PolicyKind::LeCaR => "lecar",
            PolicyKind::Lhd => "lhd",
        }
    }

    /// Whether the policy must be told each request's next reference (see
    /// [`Belady`]): it then runs only in a replay that reads the trace up
    /// front, and cannot be a cooperative node's own cache. [`build`](Self::build)
    /// and [`factory`](Self::factory) give it no future.
    pub fn needs_future(self) -> bool {
        self == PolicyKind::Belady
    }

    /// Whether the policy, as libCacheSim defines it, can drop a block
    /// during a hit without an eviction anyone sees ([`Lirs`], [`Slru`],
    /// [`WTinyLfu`]'s main cache), or leave a missed object uncached after
    /// making room for it ([`Gdsf`]): a cooperative node's manager could not
    /// track its blocks.
    pub fn drops_on_hit(self) -> bool {
        matches!(
            self,
            PolicyKind::Lirs | PolicyKind::Slru | PolicyKind::Gdsf | PolicyKind::WTinyLfu
        )
    }

    /// Builds an empty cache of this policy with `capacity` (blocks, or
    /// [`Capacity::Bytes`]) and hands it to `visitor`. A block cache's nodes
    /// store no sizes ([`Unit`]): it must only be told size 1.
    pub fn build<K: BlockKey, V: PolicyVisitor<K>>(
        self,
        capacity: impl Into<Capacity>,
        visitor: V,
    ) -> Result<V::Output, CapacityError> {
        let capacity = capacity.into();
        let one = BuildOne { capacity, visitor };
        match capacity {
            Capacity::Blocks(_) => self.weighted_factory::<K, Unit, _>(one),
            Capacity::Bytes(_) => self.weighted_factory::<K, u32, _>(one),
        }
    }

    /// Hands this policy's constructor of block caches to `factory` (a
    /// cluster's node caches): their nodes store no sizes ([`Unit`]), so
    /// they must only be told size 1.
    pub fn factory<K: BlockKey, F: PolicyFactory<K>>(self, factory: F) -> F::Output {
        self.weighted_factory::<K, Unit, F>(factory)
    }

    /// Hands `factory` the constructor of this policy with nodes storing
    /// sizes as `W`.
    fn weighted_factory<K: BlockKey, W: Weight, F: PolicyFactory<K>>(
        self,
        factory: F,
    ) -> F::Output {
        match self {
            PolicyKind::Lru => factory.make(Lru::<K, W>::with_weights),
            PolicyKind::Fifo => factory.make(Fifo::<K, W>::with_weights),
            PolicyKind::Clock => factory.make(Clock::<K, W>::with_weights),
            PolicyKind::Sieve => factory.make(Sieve::<K, W>::with_weights),
            PolicyKind::Arc => factory.make(Arc::<K, W>::with_weights),
            PolicyKind::S3Fifo => factory.make(S3Fifo::<K, W>::with_weights),
            PolicyKind::TwoQ => factory.make(TwoQ::<K, W>::with_weights),
            PolicyKind::Lirs => factory.make(Lirs::<K, W>::with_weights),
            PolicyKind::Lfu => factory.make(Lfu::<K, W>::with_weights),
            PolicyKind::Belady => factory.make(Belady::<K, W>::with_weights),
            PolicyKind::Slru => factory.make(Slru::<K, W>::with_weights),
            PolicyKind::S3FifoV1 => factory.make(S3FifoV1::<K, W>::with_weights),
            PolicyKind::Random => factory.make(Random::<K, W>::with_weights),
            PolicyKind::Lfuda => factory.make(Lfuda::<K, W>::with_weights),
            PolicyKind::Gdsf => factory.make(Gdsf::<K, W>::with_weights),
            PolicyKind::Hyperbolic => factory.make(Hyperbolic::<K, W>::with_weights),
            PolicyKind::WTinyLfu => factory.make(WTinyLfu::<K, W>::with_weights),
            PolicyKind::Qdlp => factory.make(Qdlp::<K, W>::with_weights),
            PolicyKind::Mq => factory.make(Mq::<K, W>::with_weights),
            PolicyKind::ClockPro => factory.make(ClockPro::<K, W>::with_weights),
            PolicyKind::LeCaR => factory.make(LeCaR::<K, W>::with_weights),
            PolicyKind::Lhd => factory.make(Lhd::<K, W>::with_weights),
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy name that is not one of [`PolicyKind::ALL`].
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown policy `{0}`: expected one of {names}", names = policy_names())]
pub struct UnknownPolicy(pub String);

/// Every policy's name, comma-separated, for messages.
fn policy_names() -> String {
    let names: Vec<&str> = PolicyKind::ALL.iter().map(|k| k.name()).collect();
    names.join(", ")
}

impl FromStr for PolicyKind {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase();
        let alias = match wanted.as_str() {
            "s3-fifo" => "s3fifo",
            "twoq" => "2q",
            "opt" | "min" => "belady",
            "s3fifo-current" | "s3-fifo-v1" => "s3fifo-v1",
            "clock-pro" => "clockpro",
            other => other,
        };
        PolicyKind::ALL
            .into_iter()
            .find(|kind| kind.name() == alias)
            .ok_or_else(|| UnknownPolicy(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back() {
        for kind in PolicyKind::ALL {
            assert_eq!(kind.name().parse::<PolicyKind>(), Ok(kind));
        }
        assert_eq!("S3-FIFO".parse::<PolicyKind>(), Ok(PolicyKind::S3Fifo));
        assert_eq!(
            "s3fifo-current".parse::<PolicyKind>(),
            Ok(PolicyKind::S3FifoV1)
        );
    }

    #[test]
    fn only_belady_needs_the_future() {
        assert_eq!("OPT".parse::<PolicyKind>(), Ok(PolicyKind::Belady));
        let needing: Vec<_> = PolicyKind::ALL
            .into_iter()
            .filter(|k| k.needs_future())
            .collect();
        assert_eq!(needing, [PolicyKind::Belady]);
    }

    #[test]
    fn unknown_name_is_an_error_naming_it() {
        let err = "lfuu".parse::<PolicyKind>().unwrap_err();
        assert!(err.to_string().contains("`lfuu`"), "{err}");
    }
}
