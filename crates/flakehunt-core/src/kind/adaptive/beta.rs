//! Seeded Gamma and Beta variates for Thompson sampling, from the project's [`Rng`]: a few lines
//! each, and identical on every platform, so a seed reproduces every decision. Main function:
//! [`beta`].

use crate::plan::Rng;

/// A uniform variate in (0, 1): 53 random bits, never 0 (a logarithm is taken of it).
fn uniform(rng: &mut Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

/// A standard normal variate (Box-Muller; the second variate of the pair is dropped, which keeps
/// the generator free of state beyond the [`Rng`]).
fn normal(rng: &mut Rng) -> f64 {
    let (u, v) = (uniform(rng), uniform(rng));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A Gamma(`shape`, 1) variate: Marsaglia and Tsang, "A simple method for generating gamma
/// variables", ACM TOMS 26(3), 2000, with their boost `Gamma(a) = Gamma(a + 1) U^(1/a)` for a
/// shape below 1. `shape` must be positive.
pub fn gamma(rng: &mut Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        return gamma(rng, shape + 1.0) * uniform(rng).powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = uniform(rng);
        // The squeeze accepts most draws without a logarithm.
        if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// A Beta(`a`, `b`) variate, as `X / (X + Y)` with X ~ Gamma(a), Y ~ Gamma(b). Both positive.
pub fn beta(rng: &mut Rng, a: f64, b: f64) -> f64 {
    let x = gamma(rng, a);
    let y = gamma(rng, b);
    if x + y > 0.0 {
        x / (x + y)
    } else {
        // Both underflowed (tiny shapes): the mean is the best answer left.
        a / (a + b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(a: f64, b: f64, n: usize) -> (f64, f64) {
        let mut rng = Rng::new(42);
        let xs: Vec<f64> = (0..n).map(|_| beta(&mut rng, a, b)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!(xs.iter().all(|x| (0.0..=1.0).contains(x)));
        (mean, var)
    }

    #[test]
    fn beta_variates_have_the_beta_moments() {
        // Seeded, so the test is exact and cannot flake; the tolerances are ~5 standard errors of
        // 20,000 draws, so any seed would pass them.
        for (a, b) in [(0.5, 2.0), (1.0, 1.0), (3.0, 40.0), (12.5, 3.5)] {
            let (mean, var) = moments(a, b, 20_000);
            let want_mean = a / (a + b);
            let want_var = a * b / ((a + b).powi(2) * (a + b + 1.0));
            assert!(
                (mean - want_mean).abs() < 5.0 * (want_var / 20_000.0).sqrt(),
                "{a},{b}: mean {mean} vs {want_mean}"
            );
            assert!((var / want_var - 1.0).abs() < 0.08, "{a},{b}: var {var} vs {want_var}");
        }
    }

    #[test]
    fn gamma_matches_its_distribution() {
        use statrs::distribution::{ContinuousCDF, Gamma};
        // Kolmogorov-Smirnov distance against statrs's CDF, for a shape below and above 1.
        for shape in [0.5, 4.0] {
            let mut rng = Rng::new(7);
            let mut xs: Vec<f64> = (0..5000).map(|_| gamma(&mut rng, shape)).collect();
            xs.sort_by(f64::total_cmp);
            let dist = Gamma::new(shape, 1.0).unwrap();
            let d = xs
                .iter()
                .enumerate()
                .map(|(i, &x)| (dist.cdf(x) - (i as f64 + 0.5) / xs.len() as f64).abs())
                .fold(0.0, f64::max);
            // The 99.9 % critical value of the KS statistic for n = 5000 is 1.95 / sqrt(n) = 0.028.
            assert!(d < 0.028, "shape {shape}: KS distance {d}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_draws() {
        let draws = |seed| {
            let mut r = Rng::new(seed);
            (0..5).map(|_| beta(&mut r, 0.5, 3.0)).collect::<Vec<_>>()
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3), draws(4));
    }
}
