//! Streaming aggregation of attempts: constant memory per cell and per signature, so a hunt of
//! 100,000 attempts summarises in the memory of one. Main type: [`Tally`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::{Attempt, Outcome};
pub use crate::schema::summary::DurationHistogram;

/// Counts for one cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellTally {
    /// Attempts recorded.
    pub attempts: u64,
    /// Fail + crash + timeout.
    pub failures: u64,
    /// Attempts ended as slow by a limit flakehunt set: recorded, but no evidence either way.
    #[serde(default)]
    pub slow: u64,
    /// Per outcome.
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Attempts that ran as confirmations (matrix).
    pub confirmations: u64,
    /// Sum of wall-clock seconds.
    pub seconds: f64,
    /// Duration histograms of passing and failing attempts.
    pub durations: DurationHistogram,
    /// What the profile measured, aggregated.
    pub effect: EffectTally,
    /// Sum and count of load averages seen.
    pub load_sum: f64,
    /// Number of attempts with a load reading.
    pub load_n: u64,
    /// Attempts that left processes behind (whatever their outcome).
    pub leaking: u64,
    /// How many of the cell's attempts ran at once (what `copies=N` measures).
    #[serde(default)]
    pub at_once: AtOnce,
}

impl CellTally {
    /// Attempts that are evidence about the target, which every rate counts: all but the slow.
    pub fn judged(&self) -> u64 {
        self.attempts - self.slow
    }
}

/// The most attempts of one cell seen running at once, from their start times and lengths:
/// the effect of `copies=N`, whose N attempts the plan starts together.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AtOnce {
    /// The most attempts running at the start of one of them.
    pub most: u64,
    /// Attempts with a start time.
    pub measured: u64,
    /// The attempts that may still overlap one recorded later: start, end, and how many ran
    /// at its start.
    #[serde(skip)]
    recent: Vec<(f64, f64, u64)>,
}

impl AtOnce {
    /// Attempts are recorded as they end, so one that ended before this one started overlaps
    /// nothing recorded from now on but attempts longer than it (which it does not start
    /// inside): dropped, it keeps the memory as small as the attempts running at once. The most
    /// a cell can run at once bounds what is kept besides.
    fn add(&mut self, a: &Attempt) {
        let Some(start) = unix_seconds(&a.started_at) else { return };
        let end = start + a.seconds.max(0.0);
        self.measured += 1;
        self.recent.retain(|&(_, e, _)| e > start);
        let mut running = 1;
        for (s, e, n) in &mut self.recent {
            if *s <= start && start < *e {
                running += 1;
            } else if start < *s && *s < end {
                *n += 1;
                self.most = self.most.max(*n);
            }
        }
        self.most = self.most.max(running);
        self.recent.push((start, end, running));
        if self.recent.len() > crate::profile::MAX_COPIES as usize {
            self.recent.remove(0);
        }
    }
}

/// The effects recorded by a cell's attempts, aggregated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EffectTally {
    /// CPU lists read back, with counts.
    pub cpus: BTreeMap<String, u64>,
    /// Mechanisms used, with counts.
    pub mechanisms: BTreeMap<String, u64>,
    /// Sum and count of CPU shares measured.
    pub cpu_share_sum: f64,
    /// Number of CPU share readings.
    pub cpu_share_n: u64,
    /// CPU seconds used by noise.
    pub noise_cpu_seconds: f64,
    /// Policies read back, with counts.
    pub policies: BTreeMap<String, u64>,
    /// Nice values read back, with counts.
    pub nice: BTreeMap<i32, u64>,
    /// Periods throttled by a cgroup quota, in all.
    pub throttled: u64,
    /// Attempts with a throttling reading.
    pub throttled_n: u64,
    /// Attempts with a noise reading.
    pub noise_n: u64,
    /// Attempts with a pause reading.
    pub pauses_n: u64,
    /// Pauses delivered in all.
    pub pauses: u64,
    /// Total paused seconds.
    pub paused_seconds: f64,
    /// Attempts whose Python child reported a switch interval.
    pub switch_reported: u64,
    /// Largest switch interval reported.
    pub switch_interval_max: Option<f64>,
    /// Attempts with a jitter report.
    #[serde(default)]
    pub jitter_n: u64,
    /// Delays the jitter library injected in all.
    #[serde(default)]
    pub jitter_delays: u64,
    /// Hints set (the last attempt's; they do not vary within a cell).
    pub hints: BTreeMap<String, String>,
    /// Reasons attempts gave for being inert, with counts.
    pub inert: BTreeMap<String, u64>,
    /// Attempts with an effect record.
    pub measured: u64,
}

/// One failure signature.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SignatureTally {
    /// Attempts with it.
    pub count: u64,
    /// Per cell.
    pub cells: BTreeMap<String, u64>,
    /// The tail of its first attempt's stream that holds the failure (see
    /// [`crate::signature::failure_stream`]).
    pub example: String,
    /// Which stream `example` is: `stderr` or `stdout`.
    #[serde(default = "crate::signature::stderr_name")]
    pub stream: String,
    /// Id of its first attempt (its logs are in `logs/`).
    pub first_attempt: u64,
}

/// Signatures beyond this many distinct ones are grouped as one, so a failure that prints a
/// unique value every time cannot grow memory without bound.
const MAX_SIGNATURES: usize = 256;

/// All cells and signatures of a hunt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Per cell, by name.
    pub cells: BTreeMap<String, CellTally>,
    /// Per signature.
    pub signatures: BTreeMap<String, SignatureTally>,
    /// Smallest and largest one-minute load average seen.
    pub load_range: Option<(f64, f64)>,
}

impl Tally {
    /// Adds one attempt.
    pub fn add(&mut self, a: &Attempt) {
        let cell = self.cells.entry(a.cell.clone()).or_default();
        cell.attempts += 1;
        cell.slow += u64::from(!a.outcome.is_evidence());
        *cell.outcomes.entry(a.outcome).or_default() += 1;
        if a.outcome.is_failure() {
            cell.failures += 1;
        }
        if a.phase.as_deref() == Some("confirm") {
            cell.confirmations += 1;
        }
        if !a.leaked.is_empty() {
            cell.leaking += 1;
        }
        cell.seconds += a.seconds;
        let bucket = DurationHistogram::bucket(a.seconds);
        if a.outcome.is_failure() {
            cell.durations.fail[bucket] += 1;
        } else if a.outcome == Outcome::Pass {
            cell.durations.pass[bucket] += 1;
        }
        if let Some(load) = a.load {
            cell.load_sum += load;
            cell.load_n += 1;
            self.load_range = Some(match self.load_range {
                None => (load, load),
                Some((lo, hi)) => (lo.min(load), hi.max(load)),
            });
        }
        cell.effect.add(&a.effect);
        cell.at_once.add(a);
        if let Some(sig) = &a.signature {
            let key = if self.signatures.len() >= MAX_SIGNATURES && !self.signatures.contains_key(sig) {
                "(other signatures)".to_owned()
            } else {
                sig.clone()
            };
            let entry = self.signatures.entry(key).or_insert_with(|| {
                let (stream, example) = crate::signature::failure_stream(&a.stdout_tail, &a.stderr_tail);
                SignatureTally {
                    example: example.to_owned(),
                    stream: stream.to_owned(),
                    first_attempt: a.id,
                    ..Default::default()
                }
            });
            entry.count += 1;
            *entry.cells.entry(a.cell.clone()).or_default() += 1;
        }
    }
}

impl EffectTally {
    fn add(&mut self, e: &crate::record::Effect) {
        if e.is_empty() {
            return;
        }
        self.measured += 1;
        if let Some(c) = &e.cpus {
            *self.cpus.entry(c.clone()).or_default() += 1;
        }
        if let Some(m) = &e.mechanism {
            *self.mechanisms.entry(m.clone()).or_default() += 1;
        }
        if let Some(s) = e.cpu_share {
            self.cpu_share_sum += s;
            self.cpu_share_n += 1;
        }
        if let Some(n) = e.noise_cpu_seconds {
            self.noise_cpu_seconds += n;
            self.noise_n += 1;
        }
        if let Some(t) = e.throttled {
            self.throttled += t;
            self.throttled_n += 1;
        }
        if e.pauses.is_some() {
            self.pauses_n += 1;
        }
        if let Some(p) = &e.policy {
            *self.policies.entry(p.clone()).or_default() += 1;
        }
        if let Some(n) = e.nice {
            *self.nice.entry(n).or_default() += 1;
        }
        self.pauses += e.pauses.unwrap_or(0);
        self.paused_seconds += e.paused_seconds.unwrap_or(0.0);
        if let Some(s) = e.switch_interval {
            self.switch_reported += 1;
            self.switch_interval_max = Some(self.switch_interval_max.map_or(s, |m: f64| m.max(s)));
        }
        if let Some(d) = e.jitter_delays {
            self.jitter_n += 1;
            self.jitter_delays += d;
        }
        if !e.hints.is_empty() {
            self.hints.clone_from(&e.hints);
        }
        if let Some(r) = &e.inert {
            *self.inert.entry(r.clone()).or_default() += 1;
        }
    }

    /// Mean CPU share, when measured.
    pub fn cpu_share(&self) -> Option<f64> {
        (self.cpu_share_n > 0).then(|| self.cpu_share_sum / self.cpu_share_n as f64)
    }
}

/// Seconds since the Unix epoch of an RFC 3339 time as the record writes them (`started_at`).
pub(crate) fn unix_seconds(rfc3339: &str) -> Option<f64> {
    let t = humantime::parse_rfc3339_weak(rfc3339.trim_end_matches('Z')).ok()?;
    t.duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_buckets_are_monotonic_and_bounded() {
        assert_eq!(DurationHistogram::bucket(0.0), 0);
        assert_eq!(DurationHistogram::bucket(0.001), 0);
        assert!(DurationHistogram::bucket(0.01) < DurationHistogram::bucket(0.1));
        assert_eq!(DurationHistogram::bucket(1e9), DurationHistogram::BUCKETS - 1);
        assert!((DurationHistogram::lower_edge(DurationHistogram::PER_DECADE) - 0.01).abs() < 1e-12);
    }
    #[test]
    fn at_once_counts_the_attempts_running_together_in_any_recording_order() {
        use crate::kind::adaptive::reproduction::tests::attempt;
        let most = |spans: &[(f64, f64)]| {
            let mut t = Tally::default();
            for (i, &(at, seconds)) in spans.iter().enumerate() {
                t.add(&attempt(i as u64, "copies=3", at, seconds, false, None));
            }
            t.cells["copies=3"].at_once.clone()
        };
        // One after another: never two at once.
        assert_eq!(most(&[(0.0, 1.0), (1.5, 1.0), (3.0, 1.0)]).most, 1);
        // Three started together, recorded as they end (the longest first started last), then
        // one alone.
        let together = most(&[(0.2, 0.5), (0.1, 1.0), (0.0, 2.0), (5.0, 1.0)]);
        assert_eq!((together.most, together.measured), (3, 4));
        // The attempt that started first is recorded last: it still counts the others.
        assert_eq!(most(&[(1.0, 0.5), (1.2, 0.5), (0.5, 3.0)]).most, 3);
        // No start time (a damaged record): nothing measured.
        let mut t = Tally::default();
        let mut a = attempt(0, "c", 0.0, 1.0, false, None);
        a.started_at = String::new();
        t.add(&a);
        assert_eq!(t.cells["c"].at_once.measured, 0);
    }
}
