//! Test-only statistics: the Kolmogorov–Smirnov statistic and its critical
//! value, the normal CDF, binomial bounds and autocorrelation.
//!
//! Kept free of dependencies on purpose (no statistics crate); everything
//! here is textbook: KS per Massey (1951) with the asymptotic critical value
//! `1.628/√n` at α = 0.01; `erfc` by the Chebyshev fit of Numerical Recipes
//! (`erfcc`, fractional error < 1.2·10⁻⁷ everywhere), which is independent of
//! the inverse-CDF code under test in `delay.rs`.

/// The two-sided KS statistic `D = sup |F_n(x) − F(x)|` of `samples` against
/// the continuous CDF `cdf`. Sorts `samples`.
pub fn ks_statistic(samples: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
    ks_statistic_with_atoms(samples, &cdf, &cdf)
}

/// The KS statistic against a CDF with atoms: `cdf(x) = P(X ≤ x)` and
/// `cdf_left(x) = P(X < x)`. Tied samples are grouped, so an atom of the
/// model matched by tied samples counts as agreement. Sorts `samples`.
pub fn ks_statistic_with_atoms(
    samples: &mut [f64],
    cdf: impl Fn(f64) -> f64,
    cdf_left: impl Fn(f64) -> f64,
) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    let n = samples.len() as f64;
    let mut d: f64 = 0.0;
    let mut a = 0;
    while a < samples.len() {
        let x = samples[a];
        let b = a + samples[a..].partition_point(|&y| y == x);
        // F_n(x) = b/n against F(x); F_n(x−) = a/n against F(x−).
        d = d.max(b as f64 / n - cdf(x)).max(cdf_left(x) - a as f64 / n);
        a = b;
    }
    d
}

/// KS critical value at α = 0.01 for `n` samples (asymptotic).
pub fn ks_critical_001(n: usize) -> f64 {
    1.628 / (n as f64).sqrt()
}

/// Complementary error function (Numerical Recipes `erfcc`).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let ans = t * poly.exp();
    if x >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

/// Error function.
pub fn erf(x: f64) -> f64 {
    1.0 - erfc(x)
}

/// Standard normal CDF Φ.
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Asserts that `count` successes out of `n` Bernoulli(p) trials lie within
/// 3σ of the binomial mean `n·p`, and that the window excludes 0 (so the
/// check cannot pass for a model that never fires).
pub fn assert_binomial_3sigma(count: u64, n: u64, p: f64, what: &str) {
    let mean = n as f64 * p;
    let sigma = (n as f64 * p * (1.0 - p)).sqrt();
    assert!(
        mean - 3.0 * sigma > 0.0,
        "{what}: test too weak, 3σ window includes 0"
    );
    let dev = (count as f64 - mean).abs();
    assert!(
        dev <= 3.0 * sigma,
        "{what}: {count} of {n}, expected {mean:.1} ± {:.1} (3σ)",
        3.0 * sigma
    );
}

/// Lag-1 sample autocorrelation.
pub fn lag1_autocorrelation(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    let cov: f64 = xs.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    cov / var
}

/// Mean length of runs of `true` in `xs` (None if there is no run).
pub fn mean_run_length(xs: impl IntoIterator<Item = bool>) -> Option<f64> {
    let (mut runs, mut total, mut prev) = (0u64, 0u64, false);
    for x in xs {
        if x {
            total += 1;
            if !prev {
                runs += 1;
            }
        }
        prev = x;
    }
    (runs > 0).then(|| total as f64 / runs as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pass proves: the reference normal CDF is accurate to 1e-6 at known
    /// points (so KS tests against it are meaningful).
    #[test]
    fn normal_cdf_known_values() {
        for (x, p) in [
            (0.0, 0.5),
            (1.0, 0.841_344_746),
            (-1.96, 0.024_997_895),
            (3.0, 0.998_650_102),
        ] {
            assert!((normal_cdf(x) - p).abs() < 1e-6, "Φ({x})");
        }
        assert!((erf(0.5) - 0.520_499_878).abs() < 1e-6);
    }

    /// Pass proves: the KS statistic rejects a wrong distribution and accepts
    /// a right one (uniform grid vs U(0,1) and vs U(0,2)).
    #[test]
    fn ks_discriminates() {
        let n = 10_000;
        let mut xs: Vec<f64> = (0..n).map(|i| (i as f64 + 0.5) / n as f64).collect();
        assert!(ks_statistic(&mut xs, |x| x.clamp(0.0, 1.0)) < ks_critical_001(n));
        assert!(ks_statistic(&mut xs, |x| (x / 2.0).clamp(0.0, 1.0)) > ks_critical_001(n));
    }

    /// Pass proves: run lengths are counted per maximal run.
    #[test]
    fn run_lengths() {
        let xs = [true, true, false, true, false, false, true, true, true];
        assert_eq!(mean_run_length(xs), Some(2.0));
        assert_eq!(mean_run_length([false, false]), None);
    }
}
