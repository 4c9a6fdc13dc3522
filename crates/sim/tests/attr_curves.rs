//! The stack-distance curves equal direct simulation: for random request
//! mixes (every file type, reads and writes, offsets across block edges)
//! and configurations (the Unix baseline, the variable scheme, two- and
//! three-category notations), at sampled total sizes, every figure (read
//! request misses, write expulsions, origin blocks and bytes) of one pass
//! matches replaying the requests through an attribute cache of that size.

use coopcache_core::attr::{Access, FileRequest, FileType};
use coopcache_sim::attr::{Curves, Scheme, simulate};
use proptest::prelude::*;

fn request() -> impl Strategy<Value = FileRequest> {
    let kind = prop_oneof![
        Just(FileType::Inode),
        Just(FileType::Directory),
        Just(FileType::Datafile),
        Just(FileType::Executable)
    ];
    (
        kind,
        0u64..60,
        0u64..40_000,
        1u64..20_000,
        prop::bool::weighted(0.2),
    )
        .prop_map(|(kind, file, offset, len, write)| {
            // A few files are large (past the 512 KiB cut-off).
            let file_size = if file % 7 == 0 {
                900_000
            } else {
                4_000 + file * 700
            };
            FileRequest {
                client: 0,
                file,
                kind,
                file_size,
                offset: offset.min(file_size - 1),
                len,
                access: if write { Access::Write } else { Access::Read },
            }
        })
}

fn schemes() -> Vec<Scheme> {
    [
        "unix",
        "variable",
        "16K/128 ID, x/8K General",
        "8K/128 ID, x/4K Temporal, 256K/64K Sequential",
        "x/4K Unix, 16K/128 inode",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn one_pass_curves_equal_direct_simulation(requests in prop::collection::vec(request(), 1..600)) {
        let schemes = schemes();
        let curves = Curves::new(&requests, &schemes);
        for scheme in &schemes {
            for total in [40u64 << 10, 100 << 10, 300 << 10, 1 << 20, 3 << 20, 40 << 20] {
                let Ok(expected) = scheme.at(total).resolve(total) else { continue };
                let direct = simulate(&requests, &expected).unwrap();
                let curve = curves.point(scheme, total).unwrap();
                prop_assert_eq!(curve, direct, "{} at {} bytes", scheme, total);
            }
        }
    }
}
