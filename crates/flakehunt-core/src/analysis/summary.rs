//! The summary document: per-cell statistics against the baseline, signatures, inert profiles
//! and the verdict, computed from a tally alone so that the live run, `report` and `merge` agree.
//! Main type: [`Summary`]. Its fields are a contract (ARCHITECTURE.md): add freely, never rename.

use super::stats::{self, Amplification};
use super::tally::{CellTally, Tally};
use crate::plan::CellSpec;
use crate::record::{Manifest, Outcome, FORMAT_VERSION};
pub use crate::schema::summary::{CellSummary, SignatureSummary, Summary};

/// Significance level for calling a cell different from the baseline.
pub const ALPHA: f64 = 0.01;

/// A summary computed from a hunt's tally (the type is the schema's).
pub trait SummaryOf {
    /// Summarises a tally of `cells` (the first is the baseline); `planned` is the number of
    /// attempts the plan holds.
    fn build(manifest: &Manifest, cells: &[CellSpec], tally: &Tally, planned: u64) -> Self;
}

impl SummaryOf for Summary {
    fn build(manifest: &Manifest, cells: &[CellSpec], tally: &Tally, planned: u64) -> Self {
        let empty = CellTally::default();
        let baseline_name = cells.first().map(|c| c.name.clone()).unwrap_or_default();
        let base = tally.cells.get(&baseline_name).unwrap_or(&empty);
        let python = manifest.target.looks_like_python();
        let mut out_cells = Vec::new();
        for (i, spec) in cells.iter().enumerate() {
            let t = tally.cells.get(&spec.name).unwrap_or(&empty);
            out_cells.push(cell_summary(spec, t, (i > 0).then_some(base), python));
        }
        let attempts: u64 = tally.cells.values().map(|c| c.attempts).sum();
        let failures: u64 = tally.cells.values().map(|c| c.failures).sum();
        let mut signatures: Vec<SignatureSummary> = tally
            .signatures
            .iter()
            .map(|(sig, s)| SignatureSummary {
                signature: sig.clone(),
                count: s.count,
                cells: s.cells.keys().cloned().collect(),
                example: s.example.clone(),
                stream: s.stream.clone(),
                first_attempt: s.first_attempt,
            })
            .collect();
        signatures.sort_by(|a, b| b.count.cmp(&a.count).then(a.signature.cmp(&b.signature)));
        let (verdict, verdict_text) = sweep_verdict(&out_cells, failures, attempts, &baseline_name);
        // An adaptive hunt's conclusion says what its clean arms rule out, at the rate that
        // matters (the one a failure would have shown at within the attempts it ran).
        // A verification says what its clean attempts rule out at its own level.
        let mut notes = if matches!(manifest.kind, crate::record::Kind::Adaptive | crate::record::Kind::Verify) {
            Vec::new()
        } else {
            zero_failure_notes(&out_cells)
        };
        for c in out_cells.iter().filter(|c| c.inert && c.p_value.is_some_and(|p| p < ALPHA)) {
            notes.push(format!(
                "{} differs from {baseline_name} ({}), but its profile had no effect here: the difference is not attributed to it",
                c.name,
                stats::format_p(c.p_value.unwrap_or(1.0))
            ));
        }
        let slow: u64 = out_cells.iter().map(|c| c.slow).sum();
        if slow > 0 {
            let by = if manifest.kind == crate::record::Kind::Adaptive {
                "the hang rule or the end of the budget"
            } else {
                "the default --timeout"
            };
            notes.push(format!(
                "{slow} attempts were ended by {by} while still at work (using CPU, printing or runnable): slow, no evidence either way, and left out of every rate{}",
                if manifest.kind == crate::record::Kind::Adaptive { "" } else { "; give --timeout to count such attempts as failures" }
            ));
        }
        if let Some((lo, hi)) = tally.load_range {
            if hi - lo >= 1.0 && hi >= 1.5 * lo.max(0.5) {
                notes.push(format!(
                    "the machine's load changed during the hunt (1-minute load {lo:.1} to {hi:.1}): compare the cells' mean load before reading a profile's effect into a difference"
                ));
            }
        }
        Summary {
            format_version: FORMAT_VERSION,
            kind: manifest.kind,
            run_id: manifest.run_id.clone(),
            target: manifest.target.display(),
            verdict,
            verdict_text,
            baseline: baseline_name,
            attempts,
            planned,
            failures,
            complete: attempts >= planned,
            cells: out_cells,
            signatures,
            notes,
            outputs: Vec::new(),
            dimensions: None,
            attribution: None,
            details: crate::schema::details::Details::None,
            adaptive: None,
            modes: None,
            checks: None,
            fire: None,
            suite: None,
        }
    }
}

fn cell_summary(spec: &CellSpec, t: &CellTally, base: Option<&CellTally>, python: bool) -> CellSummary {
    // Rates count the attempts that are evidence: a slow one (ended by flakehunt's own limit
    // while still at work) is neither a pass nor a failure.
    let n = t.judged();
    let rate = if n == 0 { 0.0 } else { t.failures as f64 / n as f64 };
    let (lo, hi) = stats::wilson(t.failures, n, stats::Z95);
    let upper_bound = (t.failures == 0 && n > 0).then(|| stats::zero_failure_upper_bound(n, 0.95));
    let mut p_value = None;
    let mut amp: Option<Amplification> = None;
    if let Some(b) = base {
        let bn = b.judged();
        if n > 0 && bn > 0 {
            p_value = Some(stats::fisher_exact_two_sided(t.failures, n - t.failures, b.failures, bn - b.failures));
            amp = stats::amplification(t.failures, n, b.failures, bn);
        }
    }
    let inert_reason = inert_reason(spec, t, python);
    // A profile that had no effect here cannot be what a difference depends on.
    let sensitive = p_value.is_some_and(|p| p < ALPHA) && inert_reason.is_none();
    let base_rate = base.map(|b| if b.judged() == 0 { 0.0 } else { b.failures as f64 / b.judged() as f64 });
    let direction =
        sensitive.then(|| if Some(rate) > base_rate { "amplifies".to_owned() } else { "suppresses".to_owned() });
    let meaning = direction.as_deref().and_then(|d| meaning(spec, d));
    let outcomes =
        Outcome::ALL.iter().map(|o| (o.name().to_owned(), t.outcomes.get(o).copied().unwrap_or(0))).collect();
    CellSummary {
        name: spec.name.clone(),
        attempts: t.attempts,
        failures: t.failures,
        slow: t.slow,
        outcomes,
        rate,
        ci95: [lo, hi],
        upper_bound,
        p_value,
        amplification: amp.map(|a| a.ratio),
        amplification_at_least: amp.is_some_and(|a| a.at_least),
        sensitive,
        direction,
        meaning,
        inert: inert_reason.is_some(),
        inert_reason,
        effect: effect_json(spec, t),
        mean_seconds: if t.attempts == 0 { 0.0 } else { t.seconds / t.attempts as f64 },
        mean_load: (t.load_n > 0).then(|| t.load_sum / t.load_n as f64),
        leaking: t.leaking,
        confirmations: t.confirmations,
        durations: t.durations.clone(),
        overlay: None,
        reproduced: None,
        minimal_overlay: None,
    }
}

/// Why a cell's profile had no measurable effect, judged from what its attempts recorded.
fn inert_reason(spec: &CellSpec, t: &CellTally, python: bool) -> Option<String> {
    let profile = spec.profile.as_ref()?;
    let e = &t.effect;
    let k = &profile.knobs;
    if t.attempts == 0 || profile.is_default() {
        return None;
    }
    // Reasons attempts gave themselves (not applicable here, nothing reported back) decide
    // when they concern most attempts; a few short attempts missing a pause do not.
    if let Some((reason, n)) = e.inert.iter().max_by_key(|(_, n)| **n) {
        if *n * 2 > e.measured.max(1) {
            return Some(reason.clone());
        }
    }
    if let Some(n) = k.cpus {
        if let Some(list) = e.cpus.keys().find(|list| cpu_count(list) > n as usize) {
            return Some(format!("affinity not applied: the child ran on CPUs {list}"));
        }
    }
    if let Some(q) = k.cpu_quota {
        if e.throttled_n > 0 && e.throttled == 0 {
            return Some(format!(
                "the quota of {q} % never throttled an attempt: the test does not use enough CPU for cpu-starved to change anything"
            ));
        }
        if let Some(share) = e.cpu_share() {
            if share > 0.9 && q < 90.0 {
                return Some(format!("the attempts got {:.0} % of a CPU under a {q} % quota", share * 100.0));
            }
        }
    }
    if k.pause.is_some() && e.pauses_n > 0 && e.pauses == 0 {
        let mean_ms = t.seconds / t.attempts as f64 * 1000.0;
        return Some(format!(
            "no pause was delivered: the attempts (mean {mean_ms:.0} ms) ended before the first pause (gaps of up to {} ms)",
            k.pause.map_or(0.0, |p| p.every_max_ms)
        ));
    }
    if k.noise_threads.is_some() && e.noise_n > 0 && e.noise_cpu_seconds < 1e-3 {
        return Some("the noise threads got no CPU time during the attempts".into());
    }
    if k.policy == Some(crate::profile::Policy::Idle)
        && !e.policies.contains_key("idle")
        && !e.nice.contains_key(&19)
        && !e.policies.is_empty()
    {
        return Some("neither SCHED_IDLE nor nice 19 applied".into());
    }
    if k.copies.is_some_and(|n| n > 1) && t.at_once.measured >= 2 && t.at_once.most < 2 {
        return Some("no two of its attempts ran at once".into());
    }
    if k.jitter.is_some() && e.jitter_n > 0 && e.jitter_delays == 0 {
        return Some("the jitter library loaded but injected no delay: the program made no intercepted call (stdio and Rust's std locks go through libc internals or futexes)".into());
    }
    if k.python_switch_interval.is_some() && python && e.switch_reported == 0 {
        return Some("no Python process reported its switch interval".into());
    }
    None
}

/// Number of CPUs in a list like `0-3,6`.
pub fn cpu_count(list: &str) -> usize {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|part| match part.split_once('-') {
            Some((a, b)) => b.trim().parse::<usize>().unwrap_or(0).saturating_sub(a.trim().parse().unwrap_or(0)) + 1,
            None => 1,
        })
        .sum()
}

fn effect_json(spec: &CellSpec, t: &CellTally) -> serde_json::Value {
    let e = &t.effect;
    let mut m = serde_json::Map::new();
    if spec.profile.as_ref().and_then(|p| p.knobs.copies).is_some_and(|n| n > 1) && t.at_once.measured > 0 {
        m.insert("copies_at_once".into(), t.at_once.most.into());
    }
    if let Some((cpus, _)) = e.cpus.iter().max_by_key(|(_, n)| **n) {
        m.insert("cpus".into(), cpus.clone().into());
    }
    if let Some((mech, _)) = e.mechanisms.iter().max_by_key(|(_, n)| **n) {
        m.insert("mechanism".into(), mech.clone().into());
    }
    if let Some(share) = e.cpu_share() {
        m.insert("cpu_share".into(), share.into());
    }
    if e.noise_cpu_seconds > 0.0 {
        m.insert("noise_cpu_seconds".into(), e.noise_cpu_seconds.into());
    }
    if let Some((policy, _)) = e.policies.iter().max_by_key(|(_, n)| **n) {
        m.insert("policy".into(), policy.clone().into());
    }
    if let Some((nice, _)) = e.nice.iter().max_by_key(|(_, n)| **n) {
        m.insert("nice".into(), (*nice).into());
    }
    if e.pauses > 0 {
        m.insert("pauses".into(), e.pauses.into());
        m.insert("paused_seconds".into(), e.paused_seconds.into());
    }
    if let Some(s) = e.switch_interval_max {
        m.insert("switch_interval".into(), s.into());
        m.insert("switch_reported".into(), e.switch_reported.into());
    }
    if e.jitter_n > 0 {
        m.insert("jitter_delays".into(), e.jitter_delays.into());
    }
    if !e.hints.is_empty() {
        m.insert("hints".into(), serde_json::to_value(&e.hints).unwrap_or_default());
    }
    serde_json::Value::Object(m)
}

/// What a significant difference under a profile suggests, in words (for built-in profiles).
fn meaning(spec: &CellSpec, direction: &str) -> Option<String> {
    meaning_of(&spec.profile.as_ref()?.name, direction)
}

/// What a significant difference under the built-in profile (or level of a family) `name`
/// suggests, in words.
pub(crate) fn meaning_of(name: &str, direction: &str) -> Option<String> {
    let family = name.split_once('=').map_or(name, |(f, _)| f);
    let text = match (family, direction) {
        ("one-core" | "one-core-native", "suppresses") => {
            "needs two CPUs truly in parallel: a data race or lock-free ordering bug, not a preemption bug"
        }
        ("one-core", "amplifies") => {
            "preemption exposes it: an interleaving bug that needs a thread switched out mid-operation"
        }
        ("one-core-native", "amplifies") => {
            "fails when the runtime has a single thread: a starvation or blocking-call bug"
        }
        ("cpu-starved", "amplifies") => {
            "a timing assumption: fails when the process is starved (timeouts, sleeps used as synchronisation)"
        }
        ("noisy" | "idle", "amplifies") => {
            "sensitive to competing load: a timing assumption or an unsynchronised hand-off"
        }
        ("pause", "amplifies") => {
            "fails when a process stalls at the wrong moment: lock ordering, deadlock or a lease/heartbeat assumption"
        }
        ("jitter", "amplifies") => {
            "small delays at synchronisation points bring it out: an ordering bug or an unprotected window between lock operations"
        }
        ("tight-gil", "amplifies") => {
            "a thread-switch race in Python code: an unlocked read-modify-write or check-then-act"
        }
        (_, "suppresses") => "this condition hides the failure: keep it in mind when the test passes on such machines",
        _ => return None,
    };
    Some(text.to_owned())
}

fn sweep_verdict(cells: &[CellSummary], failures: u64, attempts: u64, baseline: &str) -> (String, String) {
    if failures == 0 {
        return ("not-reproduced".into(), format!("not reproduced in {attempts} attempts"));
    }
    if cells.iter().all(|c| c.attempts > c.slow && c.failures == c.attempts - c.slow) {
        return ("deterministic".into(), "deterministic: every attempt of every cell failed".into());
    }
    let sensitive: Vec<&CellSummary> = cells.iter().filter(|c| c.sensitive).collect();
    if sensitive.is_empty() {
        return (
            "flaky-insensitive".into(),
            format!("flaky, but no cell differs from {baseline} at p < {ALPHA}: the failure does not follow these conditions (or needs more attempts to show it)"),
        );
    }
    let parts: Vec<String> = sensitive
        .iter()
        .map(|c| {
            let how = c.direction.as_deref().unwrap_or("differs");
            match c.amplification {
                Some(x) if how == "amplifies" => {
                    format!("{} amplifies (x{}{x:.1})", c.name, if c.amplification_at_least { ">=" } else { "" })
                }
                _ => format!("{} {how}", c.name),
            }
        })
        .collect();
    let names: Vec<&str> = sensitive.iter().map(|c| c.name.as_str()).collect();
    ("condition-sensitive".into(), format!("condition-sensitive ({}): {}", names.join(", "), parts.join("; ")))
}

/// Sentences about what zero failures rule out.
pub(crate) fn zero_failure_notes(cells: &[CellSummary]) -> Vec<String> {
    let mut notes = Vec::new();
    let clean: Vec<&CellSummary> = cells.iter().filter(|c| c.attempts > 0 && c.failures == 0).collect();
    // Name each clean cell when there are few; a large grid gets one sentence for all of them.
    if clean.len() > 3 {
        let fewest = clean.iter().map(|c| c.attempts).min().unwrap_or(0);
        notes.push(format!(
            "{} cells had no failure in at least {fewest} attempts each: a failure rate above {} in any of them would very likely (95 %) have shown",
            clean.len(),
            stats::format_rate(stats::zero_failure_upper_bound(fewest, 0.95))
        ));
    } else {
        for c in &clean {
            if let Some(ub) = c.upper_bound {
                notes.push(format!(
                    "{}: 0/{} failed: a failure rate above {} would very likely (95 %) have shown",
                    c.name,
                    c.attempts,
                    stats::format_rate(ub)
                ));
            }
        }
    }
    if !notes.is_empty() {
        let per = |rate: f64| stats::attempts_to_detect(rate, 0.95);
        notes.push(format!(
            "to see a failure with 95 % confidence: {} attempts per cell for a 1 % rate, {} for 0.1 %",
            per(0.01),
            per(0.001)
        ));
    }
    notes
}
