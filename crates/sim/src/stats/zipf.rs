//! Fitting Zipf's law to a popularity ranking.

use serde::Serialize;

/// A Zipf fit `frequency ~ C / rank^alpha`: the least-squares line of
/// `ln(frequency)` on `ln(rank)` over every object, ranked by frequency
/// (the fit libCacheSim's trace converter reports as `skewness`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ZipfFit {
    /// The exponent: minus the line's slope.
    pub alpha: f64,
    /// `ln C`, the line's intercept.
    pub intercept: f64,
    /// The share of the variance of `ln(frequency)` the line explains.
    pub r_squared: f64,
}

impl ZipfFit {
    /// The fit of `frequencies`, sorted in decreasing order (rank 1
    /// first); `None` with fewer than two objects.
    pub fn of(frequencies: &[u64]) -> Option<ZipfFit> {
        let n = frequencies.len();
        if n < 2 {
            return None;
        }
        let point = |i: usize| (((i + 1) as f64).ln(), (frequencies[i].max(1) as f64).ln());
        let (mut sx, mut sy) = (0.0, 0.0);
        for i in 0..n {
            let (x, y) = point(i);
            sx += x;
            sy += y;
        }
        let (mx, my) = (sx / n as f64, sy / n as f64);
        let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
        for i in 0..n {
            let (x, y) = point(i);
            sxx += (x - mx) * (x - mx);
            sxy += (x - mx) * (y - my);
            syy += (y - my) * (y - my);
        }
        let slope = sxy / sxx;
        // All frequencies equal: the line is flat and explains everything.
        let r_squared = if syy == 0.0 {
            1.0
        } else {
            sxy * sxy / (sxx * syy)
        };
        Some(ZipfFit {
            alpha: -slope,
            intercept: my - slope * mx,
            r_squared,
        })
    }

    /// The fitted frequency at `rank` (1-based).
    pub fn at(&self, rank: u64) -> f64 {
        (self.intercept - self.alpha * (rank as f64).ln()).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exact_power_law_is_recovered() {
        let f: Vec<u64> = (1..=1000u64)
            .map(|r| (1e6 / (r as f64).powf(0.8)).round() as u64)
            .collect();
        let fit = ZipfFit::of(&f).unwrap();
        assert!((fit.alpha - 0.8).abs() < 1e-3, "{fit:?}");
        assert!(fit.r_squared > 0.9999, "{fit:?}");
        assert!((fit.at(1) - 1e6).abs() / 1e6 < 1e-2);
    }

    #[test]
    fn flat_popularity_has_alpha_zero() {
        let fit = ZipfFit::of(&[3, 3, 3]).unwrap();
        assert_eq!(fit.alpha, 0.0);
        assert!(ZipfFit::of(&[3]).is_none());
    }
}
