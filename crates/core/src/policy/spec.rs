//! A policy as a command line names it: its kind and its knobs,
//! `s3fifo(small=0.2,ghost=0.5)`.
//!
//! # Adding a policy's knobs
//!
//! A policy with parameters gets, in its own file, a `<Name>Params` struct
//! with libCacheSim's defaults as `Default`, a [`Knobs`] impl (the table of
//! knobs: a short name, libCacheSim's name, the range) and a
//! `with_params(capacity, params)` constructor that `with_weights` calls
//! with the defaults. Then, here: a [`PolicyParams`] variant, one arm in
//! [`PolicyParams::defaults`] (which kinds take it), one in each of
//! `parse`, `write` and `knobs` (generic calls), and one in
//! `PolicySpec::build_weighted`. Parsing, range checks, messages and the
//! canonical form come from [`knobs`](super::knobs).

use super::knobs::{Knob, KnobError, Knobs, NoKnobs, parse_knobs, write_knobs};
use super::{
    BlockKey, Capacity, Clock, ClockParams, ClockPro, ClockProParams, Hyperbolic, LeCaR,
    LeCaRParams, Lhd, LhdParams, Mq, MqParams, ParamError, PolicyKind, PolicyVisitor, Qdlp,
    QdlpParams, Random, RandomParams, S3Fifo, S3FifoParams, S3FifoV1, Slru, SlruParams, TwoQ,
    TwoQParams, Unit, UnknownPolicy, WTinyLfu, WTinyLfuParams, Weight, bad_param,
};
use crate::admission::{AdmissionError, AdmissionSpec};
use crate::error::CapacityError;
use std::fmt;
use std::str::FromStr;

/// The knob values of one policy: which struct depends on the kind
/// ([`PolicyParams::defaults`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum PolicyParams {
    /// A policy without knobs.
    #[default]
    None,
    /// [`Clock`]'s.
    Clock(ClockParams),
    /// [`S3Fifo`]'s and [`S3FifoV1`]'s.
    S3Fifo(S3FifoParams),
    /// [`TwoQ`]'s.
    TwoQ(TwoQParams),
    /// [`Slru`]'s.
    Slru(SlruParams),
    /// [`WTinyLfu`]'s.
    WTinyLfu(WTinyLfuParams),
    /// [`ClockPro`]'s.
    ClockPro(ClockProParams),
    /// The seed of [`Random`] and [`Hyperbolic`].
    Seed(RandomParams),
    /// [`Qdlp`]'s.
    Qdlp(QdlpParams),
    /// [`LeCaR`]'s.
    LeCaR(LeCaRParams),
    /// [`Lhd`]'s.
    Lhd(LhdParams),
    /// [`Mq`]'s.
    Mq(MqParams),
}

impl PolicyParams {
    /// The default knobs of `kind` (libCacheSim's defaults): building with
    /// them is building `kind` itself.
    pub fn defaults(kind: PolicyKind) -> PolicyParams {
        use PolicyKind as K;
        match kind {
            K::Clock => PolicyParams::Clock(ClockParams::default()),
            K::S3Fifo | K::S3FifoV1 => PolicyParams::S3Fifo(S3FifoParams::default()),
            K::TwoQ => PolicyParams::TwoQ(TwoQParams::default()),
            K::Slru => PolicyParams::Slru(SlruParams::default()),
            K::WTinyLfu => PolicyParams::WTinyLfu(WTinyLfuParams::default()),
            K::ClockPro => PolicyParams::ClockPro(ClockProParams::default()),
            K::Random | K::Hyperbolic => PolicyParams::Seed(RandomParams::default()),
            K::Qdlp => PolicyParams::Qdlp(QdlpParams::default()),
            K::LeCaR => PolicyParams::LeCaR(LeCaRParams::default()),
            K::Lhd => PolicyParams::Lhd(LhdParams::default()),
            K::Mq => PolicyParams::Mq(MqParams::default()),
            _ => PolicyParams::None,
        }
    }

    /// `kind`'s knobs from `text`, the list between the parentheses.
    fn parse(kind: PolicyKind, text: &str) -> Result<PolicyParams, KnobError> {
        let name = kind.name();
        Ok(match Self::defaults(kind) {
            PolicyParams::None => {
                parse_knobs::<NoKnobs>(name, text)?;
                PolicyParams::None
            }
            PolicyParams::Clock(_) => PolicyParams::Clock(parse_knobs(name, text)?),
            PolicyParams::S3Fifo(_) => PolicyParams::S3Fifo(parse_knobs(name, text)?),
            PolicyParams::TwoQ(_) => PolicyParams::TwoQ(parse_knobs(name, text)?),
            PolicyParams::Slru(_) => PolicyParams::Slru(parse_knobs(name, text)?),
            PolicyParams::WTinyLfu(_) => PolicyParams::WTinyLfu(parse_knobs(name, text)?),
            PolicyParams::ClockPro(_) => PolicyParams::ClockPro(parse_knobs(name, text)?),
            PolicyParams::Seed(_) => PolicyParams::Seed(parse_knobs(name, text)?),
            PolicyParams::Qdlp(_) => PolicyParams::Qdlp(parse_knobs(name, text)?),
            PolicyParams::LeCaR(_) => PolicyParams::LeCaR(parse_knobs(name, text)?),
            PolicyParams::Lhd(_) => PolicyParams::Lhd(parse_knobs(name, text)?),
            PolicyParams::Mq(_) => PolicyParams::Mq(parse_knobs(name, text)?),
        })
    }

    /// Writes `(knob=value,...)` for the knobs off their defaults.
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyParams::None => Ok(()),
            PolicyParams::Clock(p) => write_knobs(p, f),
            PolicyParams::S3Fifo(p) => write_knobs(p, f),
            PolicyParams::TwoQ(p) => write_knobs(p, f),
            PolicyParams::Slru(p) => write_knobs(p, f),
            PolicyParams::WTinyLfu(p) => write_knobs(p, f),
            PolicyParams::ClockPro(p) => write_knobs(p, f),
            PolicyParams::Seed(p) => write_knobs(p, f),
            PolicyParams::Qdlp(p) => write_knobs(p, f),
            PolicyParams::LeCaR(p) => write_knobs(p, f),
            PolicyParams::Lhd(p) => write_knobs(p, f),
            PolicyParams::Mq(p) => write_knobs(p, f),
        }
    }

    /// The knobs these values are for.
    pub fn knobs(&self) -> &'static [Knob] {
        match self {
            PolicyParams::None => NoKnobs::KNOBS,
            PolicyParams::Clock(_) => ClockParams::KNOBS,
            PolicyParams::S3Fifo(_) => S3FifoParams::KNOBS,
            PolicyParams::TwoQ(_) => TwoQParams::KNOBS,
            PolicyParams::Slru(_) => SlruParams::KNOBS,
            PolicyParams::WTinyLfu(_) => WTinyLfuParams::KNOBS,
            PolicyParams::ClockPro(_) => ClockProParams::KNOBS,
            PolicyParams::Seed(_) => RandomParams::KNOBS,
            PolicyParams::Qdlp(_) => QdlpParams::KNOBS,
            PolicyParams::LeCaR(_) => LeCaRParams::KNOBS,
            PolicyParams::Lhd(_) => LhdParams::KNOBS,
            PolicyParams::Mq(_) => MqParams::KNOBS,
        }
    }
}

/// A policy, its knob values and its admission policy: what `--policy`
/// (crossed with `--admission`) names. `Copy`, so a run carries it by
/// value; [`Display`](fmt::Display) prints the canonical form, knobs at
/// their defaults left out and the admission after a `+` (`lru`,
/// `s3fifo(small=0.2)`, `lru+bloom`), which [`FromStr`] reads back.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PolicySpec {
    kind: PolicyKind,
    params: PolicyParams,
    admission: AdmissionSpec,
}

// Knob values are range-checked finite numbers, never NaN, so equality is
// reflexive.
impl Eq for PolicySpec {}

impl From<PolicyKind> for PolicySpec {
    fn from(kind: PolicyKind) -> Self {
        PolicySpec {
            kind,
            params: PolicyParams::defaults(kind),
            admission: AdmissionSpec::None,
        }
    }
}

impl PolicySpec {
    /// The policy.
    pub fn kind(&self) -> PolicyKind {
        self.kind
    }

    /// Its knob values.
    pub fn params(&self) -> PolicyParams {
        self.params
    }

    /// Its admission policy.
    pub fn admission(&self) -> AdmissionSpec {
        self.admission
    }

    /// The same policy behind `admission`.
    pub fn with_admission(self, admission: AdmissionSpec) -> Self {
        PolicySpec { admission, ..self }
    }

    /// Whether every knob is at its default (whatever the admission).
    pub fn knobs_default(&self) -> bool {
        self.params == PolicyParams::defaults(self.kind)
    }

    /// Whether the spec is its bare kind: default knobs, no admission.
    pub fn is_default(&self) -> bool {
        self.knobs_default() && self.admission.is_none()
    }

    /// Builds an empty cache of this policy with these knobs and
    /// `capacity`, and hands it to `visitor`, as [`PolicyKind::build`]
    /// (which it is, with default knobs). The admission policy is not part
    /// of the cache: the request loop consults it
    /// ([`access_admitted`](super::access_admitted)).
    pub fn build<K: BlockKey, V: PolicyVisitor<K>>(
        self,
        capacity: impl Into<Capacity>,
        visitor: V,
    ) -> Result<V::Output, CapacityError> {
        let capacity = capacity.into();
        if self.knobs_default() {
            return self.kind.build(capacity, visitor);
        }
        match capacity {
            Capacity::Blocks(_) => self.build_weighted::<K, Unit, V>(capacity, visitor),
            Capacity::Bytes(_) => self.build_weighted::<K, u32, V>(capacity, visitor),
        }
    }

    fn build_weighted<K: BlockKey, W: Weight, V: PolicyVisitor<K>>(
        self,
        capacity: Capacity,
        visitor: V,
    ) -> Result<V::Output, CapacityError> {
        use PolicyParams as P;
        Ok(match (self.kind, self.params) {
            (PolicyKind::S3FifoV1, P::S3Fifo(p)) => {
                visitor.visit(S3FifoV1::<K, W>::with_params(capacity, p)?)
            }
            (_, P::S3Fifo(p)) => visitor.visit(S3Fifo::<K, W>::with_params(capacity, p)?),
            (_, P::Clock(p)) => visitor.visit(Clock::<K, W>::with_params(capacity, p)?),
            (_, P::TwoQ(p)) => visitor.visit(TwoQ::<K, W>::with_params(capacity, p)?),
            (_, P::Slru(p)) => visitor.visit(Slru::<K, W>::with_params(capacity, p)?),
            (_, P::WTinyLfu(p)) => visitor.visit(WTinyLfu::<K, W>::with_params(capacity, p)?),
            (_, P::ClockPro(p)) => visitor.visit(ClockPro::<K, W>::with_params(capacity, p)?),
            (PolicyKind::Hyperbolic, P::Seed(p)) => {
                visitor.visit(Hyperbolic::<K, W>::with_params(capacity, p)?)
            }
            (_, P::Seed(p)) => visitor.visit(Random::<K, W>::with_params(capacity, p)?),
            (_, P::Qdlp(p)) => visitor.visit(Qdlp::<K, W>::with_params(capacity, p)?),
            (_, P::Mq(p)) => visitor.visit(Mq::<K, W>::with_params(capacity, p)?),
            (_, P::LeCaR(p)) => visitor.visit(
                LeCaR::<K, W>::with_params(capacity, p).map_err(|e| capacity_only(e, capacity))?,
            ),
            (_, P::Lhd(p)) => visitor.visit(
                Lhd::<K, W>::with_params(capacity, p).map_err(|e| capacity_only(e, capacity))?,
            ),
            (_, P::None) => return self.kind.build(capacity, visitor),
        })
    }
}

/// A knobbed build's [`ParamError`] as the [`CapacityError`] `build`
/// returns. Knob ranges lie within each policy's own checks, so only the
/// capacity is ever refused; a parameter refused all the same is reported
/// as its policy's bad parameter rather than panicking.
fn capacity_only(e: ParamError, capacity: Capacity) -> CapacityError {
    match e {
        ParamError::Capacity(e) => e,
        ParamError::OutOfRange { policy, .. } => bad_param(policy, capacity),
    }
}

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        self.params.write(f)?;
        if !self.admission.is_none() {
            write!(f, "+{}", self.admission)?;
        }
        Ok(())
    }
}

/// A `--policy` entry that cannot be used.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    /// The policy's name is not one coopcache has.
    #[error(transparent)]
    Policy(#[from] UnknownPolicy),
    /// A knob is unknown or its value out of range.
    #[error(transparent)]
    Knob(#[from] KnobError),
    /// The admission policy after `+` is unknown or badly knobbed.
    #[error(transparent)]
    Admission(#[from] AdmissionError),
    /// The text is not `name` or `name(knob=value,...)`.
    #[error(
        "`{0}` is not a policy: expected a name, optionally with knobs, e.g. `lru` or `s3fifo(small=0.2,ghost=0.5)`"
    )]
    Syntax(String),
}

/// `name` or `name(knobs)`: the name and the knob list (empty without
/// parentheses).
pub(crate) fn split_call(text: &str) -> Option<(&str, &str)> {
    let text = text.trim();
    match text.split_once('(') {
        None => Some((text, "")),
        Some((name, rest)) => {
            let knobs = rest.strip_suffix(')')?;
            (!knobs.contains(['(', ')'])).then_some((name.trim(), knobs))
        }
    }
}

/// Splits `text` at each `sep` outside parentheses:
/// `s3fifo(small=0.2,ghost=0.5),lru` is two policies.
pub fn split_top_level(text: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

impl FromStr for PolicySpec {
    type Err = SpecError;

    /// `policy(knobs)` optionally followed by `+admission(knobs)`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let syntax = || SpecError::Syntax(s.trim().into());
        let parts = split_top_level(s, '+');
        let (name, knobs) = split_call(parts[0]).ok_or_else(syntax)?;
        let kind: PolicyKind = name.parse()?;
        let admission = match parts[1..] {
            [] => AdmissionSpec::None,
            [admission] => {
                let (name, knobs) = split_call(admission).ok_or_else(syntax)?;
                AdmissionSpec::parse(name, knobs)?
            }
            _ => return Err(syntax()),
        };
        Ok(PolicySpec {
            kind,
            params: PolicyParams::parse(kind, knobs)?,
            admission,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> PolicySpec {
        s.parse().unwrap()
    }

    fn refusal(s: &str) -> String {
        s.parse::<PolicySpec>().unwrap_err().to_string()
    }

    #[test]
    fn defaults_print_as_the_bare_name() {
        for kind in PolicyKind::ALL {
            let s = PolicySpec::from(kind);
            assert_eq!(s.to_string(), kind.name());
            assert!(s.is_default());
            assert_eq!(spec(kind.name()), s);
        }
        assert_eq!(spec("s3fifo(small=0.1,ghost=0.9)").to_string(), "s3fifo");
        assert_eq!(spec("2q()").to_string(), "2q");
        assert_eq!(spec("qdlp(fifo=0.1,bits=2,move=1)").to_string(), "qdlp");
        assert_eq!(spec("lecar(update=1,lru=0.5)").to_string(), "lecar");
        assert_eq!(spec("lhd(samples=32,admissions=8)").to_string(), "lhd");
        assert_eq!(
            spec("mq(queues=8,lifetime=10000,ghost=4)").to_string(),
            "mq"
        );
    }

    #[test]
    fn knobs_round_trip_in_canonical_order() {
        for (given, canonical) in [
            ("s3fifo(ghost=0.5,small=0.2)", "s3fifo(small=0.2,ghost=0.5)"),
            ("S3-FIFO( small = 0.2 )", "s3fifo(small=0.2)"),
            ("s3fifo-v1(move=1)", "s3fifo-v1(move=1)"),
            ("2q(Ain-size-ratio=0.3,aout=1)", "2q(ain=0.3,aout=1)"),
            ("slru(segments=2)", "slru(n-seg=2)"),
            ("clock(bits=2,init=1)", "clock(bits=2,init=1)"),
            ("wtinylfu(window=0.05)", "wtinylfu(window=0.05)"),
            ("random(seed=7)", "random(seed=7)"),
            ("hyperbolic(seed=7)", "hyperbolic(seed=7)"),
            ("qdlp(move=2,fifo=0.2)", "qdlp(fifo=0.2,move=2)"),
            (
                "qdlp(ghost-size-ratio=0.5,bits=3)",
                "qdlp(ghost=0.5,bits=3)",
            ),
            ("lecar(lru-weight=0.3,update=0)", "lecar(update=0,lru=0.3)"),
            (
                "lecar(lr=0.1,discount=0.5,seed=7)",
                "lecar(lr=0.1,discount=0.5,seed=7)",
            ),
            (
                "lhd(admissions=4,samples=64)",
                "lhd(samples=64,admissions=4)",
            ),
            ("lhd(seed=7)", "lhd(seed=7)"),
            ("mq(n-queue=4,lifetime=1000)", "mq(queues=4,lifetime=1000)"),
            ("mq(Qout-size-ratio=1)", "mq(ghost=1)"),
            (
                "clock-pro(non-resident-multiplier=2,min_cold=0.1)",
                "clockpro(min_cold=0.1,non_resident=2)",
            ),
            (
                "clockpro(max_cold=0.5,cold_floor=4)",
                "clockpro(max_cold=0.5,cold_floor=4)",
            ),
        ] {
            let s = spec(given);
            assert_eq!(s.to_string(), spec(canonical).to_string(), "{given}");
            assert_eq!(spec(&s.to_string()), s, "{given}");
            assert!(!s.is_default());
        }
    }

    #[test]
    fn an_unknown_knob_lists_the_valid_ones() {
        let err = refusal("s3fifo(tiny=0.1)");
        assert!(err.contains("s3fifo has no knob `tiny`"), "{err}");
        assert!(
            err.contains("small (libCacheSim small-size-ratio)"),
            "{err}"
        );
        assert!(
            err.contains("move (libCacheSim move-to-main-threshold)"),
            "{err}"
        );
        let err = refusal("lru(size=3)");
        assert!(
            err.contains("lru has no knob `size`: expected no knobs"),
            "{err}"
        );
    }

    #[test]
    fn an_out_of_range_value_says_the_range() {
        let err = refusal("s3fifo(small=1.5)");
        assert!(err.contains("s3fifo: `small=1.5` is out of range"), "{err}");
        assert!(err.contains("from 0.001 to 0.999"), "{err}");
        let err = refusal("slru(segments=0)");
        assert!(err.contains("a whole number from 1 to 16"), "{err}");
        let err = refusal("clock(bits=two)");
        assert!(err.contains("`bits=two`"), "{err}");
        let err = refusal("2q(ain=NaN)");
        assert!(err.contains("`ain=NaN`"), "{err}");
        let err = refusal("qdlp(fifo=0.6)");
        assert!(err.contains("qdlp: `fifo=0.6` is out of range"), "{err}");
        assert!(err.contains("a number from 0.001 to 0.5"), "{err}");
        let err = refusal("lecar(update=2)");
        assert!(err.contains("a whole number from 0 to 1"), "{err}");
        let err = refusal("lhd(samples=0)");
        assert!(err.contains("a whole number from 1 to 1024"), "{err}");
        let err = refusal("mq(queues=65)");
        assert!(err.contains("a whole number from 1 to 64"), "{err}");
        let err = refusal("mq(main=2)");
        assert!(
            err.contains("queues (libCacheSim n-queue), lifetime (libCacheSim lifetime)"),
            "{err}"
        );
    }

    #[test]
    fn malformed_lists_are_refused() {
        assert!(refusal("s3fifo(small)").contains("expected knob=value"));
        assert!(refusal("s3fifo(small=0.2").contains("is not a policy"));
        assert!(refusal("lfuu(x=1)").contains("unknown policy `lfuu`"));
    }

    #[test]
    fn admission_follows_a_plus() {
        for given in [
            "lru+bloom",
            "s3fifo(small=0.2)+size(below=1MiB)",
            "2q+adaptsize(interval=1000)",
            "lru+adaptsize(iterations=5,interval=1000)",
        ] {
            let s = spec(given);
            assert_eq!(s.to_string(), given);
            assert!(!s.admission().is_none() && !s.is_default());
        }
        assert_eq!(spec("lru+none"), spec("lru"));
        assert_eq!(
            spec("lru+size(below=1024)").to_string(),
            "lru+size(below=1KiB)"
        );
        assert!(spec("lru+bloom").knobs_default());
        let err = refusal("lru+bloomy");
        assert!(
            err.contains(
                "unknown admission policy `bloomy`: expected one of none, bloom, size, adaptsize"
            ),
            "{err}"
        );
        let err = refusal("lru+size(below=0)");
        assert!(
            err.contains("size: `below=0` is out of range: expected a size in bytes"),
            "{err}"
        );
        let err = refusal("lru+bloom(window=3)");
        assert!(
            err.contains("bloom has no knob `window`: expected no knobs"),
            "{err}"
        );
        assert!(refusal("lru+bloom+size").contains("is not a policy"));
    }

    #[test]
    fn lists_split_outside_parentheses() {
        assert_eq!(
            split_top_level("s3fifo(small=0.2,ghost=0.5),lru", ','),
            ["s3fifo(small=0.2,ghost=0.5)", "lru"]
        );
        assert_eq!(split_top_level("lru", ','), ["lru"]);
    }

    #[test]
    fn knobs_reach_the_policy() {
        struct Name;
        impl PolicyVisitor<u64> for Name {
            type Output = String;
            fn visit<P: super::super::Policy<u64> + Send + 'static>(self, p: P) -> String {
                format!("{} {}", p.name(), p.capacity())
            }
        }
        let built = spec("s3fifo(small=0.5)").build(4, Name).unwrap();
        assert_eq!(built, "s3fifo 4");
        // A small queue of 1% needs 100 blocks.
        let err = spec("s3fifo(small=0.01)").build(50, Name).unwrap_err();
        assert_eq!(err.min, 100);
        for (given, name) in [
            ("qdlp(fifo=0.5)", "qdlp 4"),
            ("lecar(update=0,lru=1)", "lecar 4"),
            ("lhd(samples=4)", "lhd 4"),
            ("mq(queues=2,ghost=0)", "mq 4"),
        ] {
            assert_eq!(spec(given).build(4, Name).unwrap(), name, "{given}");
        }
        // A FIFO of 20% needs 5 blocks.
        let err = spec("qdlp(fifo=0.2)").build(4, Name).unwrap_err();
        assert_eq!(err.min, 5);
    }
}
