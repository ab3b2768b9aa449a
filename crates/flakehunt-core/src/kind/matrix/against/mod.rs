//! `matrix --against`: the applicable differences between this machine and another one are the
//! dimensions, this machine's value the baseline and the other's the second value, and the
//! search replaces the grid, which would have 2^N cells. It runs this machine as it is beside
//! every difference applied at once; when only the second fails twice, it takes the groups
//! (the environment, the limits, the locale and time zone, ...) away one at a time, keeping a
//! removal when what is left still fails twice (the matrix's smallest-overlay minimisation,
//! over groups), then delta-debugs each group that is left with more than one member (Zeller
//! and Hildebrandt's ddmin, "Simplifying and Isolating Failure-Inducing Input", 2002), so a
//! hundred differing variables cost a few dozen cells, not 2^100.
//!
//! Every tested set of differences is a cell; a cell is decided by the matrix's twice rule (it
//! reproduces at its second failure; it does not after `runs` attempts without one, or `runs +
//! confirm` with one). The search is a pure function of which cells reproduced ([`search`]),
//! so replaying a record's attempts rebuilds the plan (`--resume`) and its outcome (the
//! summary). Main types: [`AgainstPlan`], [`Dimension`].

use std::collections::BTreeMap;

pub(crate) mod prepare;
pub mod summary;

use crate::drift::ChangeSetting;
use crate::plan::{AttemptSpec, CellSpec, Next, Plan, Setting};
use crate::record::Attempt;
pub use crate::schema::against::{Against, Change, Dimension, Untried};

/// Attempts a cell's decision takes: reproduced at two failures; not after `runs` attempts
/// without one, or `runs + confirm` with one; `None` while undecided.
pub fn decided(finished: u64, failures: u64, runs: u64, confirm: u64) -> Option<bool> {
    if failures >= 2 {
        return Some(true);
    }
    let limit = if failures == 1 { runs + confirm } else { runs };
    (finished >= limit).then_some(false)
}

/// Where the search stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Search {
    /// Whether this set of dimensions reproduces is the next question.
    Ask(Vec<usize>),
    /// It fails here as it is: the baseline reproduced.
    FailsHere,
    /// With every difference applied it did not reproduce.
    NotReproduced,
    /// The smallest set that reproduces (1-minimal: no member can be taken away).
    Minimal(Vec<usize>),
    /// There is no difference to apply: nothing to run.
    NothingToTry,
}

/// The search over `dimensions` given `known`, which says of a set of dimension indices
/// (sorted) whether its cell reproduced, once that is decided. Phase one (this machine and
/// every difference) is asked before anything else.
pub fn search(dimensions: &[Dimension], known: &dyn Fn(&[usize]) -> Option<bool>) -> Search {
    let all: Vec<usize> = (0..dimensions.len()).collect();
    let Some(base) = known(&[]) else { return Search::Ask(Vec::new()) };
    if base {
        return Search::FailsHere;
    }
    match known(&all) {
        None => return Search::Ask(all),
        Some(false) => return Search::NotReproduced,
        Some(true) => {}
    }
    // Groups in the order of their first dimension.
    let mut groups: Vec<&str> = Vec::new();
    for d in dimensions {
        if !groups.contains(&d.group.as_str()) {
            groups.push(&d.group);
        }
    }
    let members = |set: &[usize], group: &str| -> Vec<usize> {
        set.iter().copied().filter(|&i| dimensions[i].group == group).collect()
    };
    let mut current = all;
    if groups.len() > 1 {
        for group in &groups {
            let candidate: Vec<usize> = current.iter().copied().filter(|&i| dimensions[i].group != *group).collect();
            if candidate.is_empty() || candidate.len() == current.len() {
                continue;
            }
            match known(&candidate) {
                None => return Search::Ask(candidate),
                Some(true) => current = candidate,
                Some(false) => {}
            }
        }
    }
    for group in &groups {
        let inside = members(&current, group);
        if inside.len() < 2 {
            continue;
        }
        let rest: Vec<usize> = current.iter().copied().filter(|&i| dimensions[i].group != *group).collect();
        let with = |subset: &[usize]| -> Vec<usize> {
            let mut set: Vec<usize> = rest.iter().chain(subset).copied().collect();
            set.sort_unstable();
            set
        };
        match ddmin(inside, &|subset| known(&with(subset))) {
            Err(subset) => return Search::Ask(with(&subset)),
            Ok(minimal) => current = with(&minimal),
        }
    }
    Search::Minimal(current)
}

/// Zeller and Hildebrandt's ddmin over `c`, which reproduces: the subsets of `n` chunks, then
/// their complements, then a finer split, until no chunk or complement reproduces at one
/// element per chunk. `Err` carries the subset to test next.
fn ddmin(mut c: Vec<usize>, test: &dyn Fn(&[usize]) -> Option<bool>) -> Result<Vec<usize>, Vec<usize>> {
    let mut n = 2usize;
    while c.len() >= 2 {
        let chunks = split(&c, n);
        let mut reduced = None;
        for chunk in &chunks {
            match test(chunk) {
                None => return Err(chunk.clone()),
                Some(true) => {
                    reduced = Some((chunk.clone(), 2));
                    break;
                }
                Some(false) => {}
            }
        }
        // With two chunks each complement is the other chunk, tested already.
        if reduced.is_none() && chunks.len() > 2 {
            for chunk in &chunks {
                let complement: Vec<usize> = c.iter().copied().filter(|i| !chunk.contains(i)).collect();
                match test(&complement) {
                    None => return Err(complement),
                    Some(true) => {
                        reduced = Some((complement, (n - 1).max(2)));
                        break;
                    }
                    Some(false) => {}
                }
            }
        }
        match reduced {
            Some((smaller, granularity)) => {
                c = smaller;
                n = granularity;
            }
            None if n >= c.len() => break,
            None => n = (2 * n).min(c.len()),
        }
    }
    Ok(c)
}

/// `c` in `n` consecutive chunks as even as can be.
fn split(c: &[usize], n: usize) -> Vec<Vec<usize>> {
    let n = n.min(c.len()).max(1);
    let (size, extra) = (c.len() / n, c.len() % n);
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for k in 0..n {
        let len = size + usize::from(k < extra);
        out.push(c[start..start + len].to_vec());
        start += len;
    }
    out
}

/// The cell of a set of dimensions: its overlay holds the settings, its profile the pinning.
/// Its name lists the changes (`TZ=America/New_York nofile=1024`), or for a large set how many
/// of which groups, with the cell's position to keep it unique; the empty set is `baseline`.
pub fn cell_of(dimensions: &[Dimension], set: &[usize], position: usize) -> CellSpec {
    let overlay: Vec<Setting> = set.iter().filter_map(|&i| dimensions[i].change.setting()).collect();
    let cpus = set.iter().find_map(|&i| match dimensions[i].change {
        Change::Cpus { count } => Some(count),
        _ => None,
    });
    let profile = cpus.map(|count| crate::profile::Profile {
        name: format!("cpus={count}"),
        summary: format!(
            "pinned to {count} CPU(s), as the other machine has; runtimes size their thread pools from it"
        ),
        knobs: crate::profile::Knobs { cpus: Some(count), runtime_hints: Some(false), ..Default::default() },
    });
    let name = if set.is_empty() {
        "baseline".to_owned()
    } else if set.len() == dimensions.len() && set.len() > 4 {
        format!("all {} differences", set.len())
    } else if set.len() <= 4 {
        // Long values (a PATH) are cut, and the cell's position keeps the name unique.
        let texts: Vec<String> = set.iter().map(|&i| shortened(&dimensions[i].change.text())).collect();
        let name = crate::redact::text(&texts.join(" ")).into_owned();
        if texts.iter().any(|t| t.ends_with("...")) {
            format!("{name} (cell {})", position + 1)
        } else {
            name
        }
    } else {
        let mut per_group: Vec<(String, usize, usize)> = Vec::new();
        for d in dimensions {
            match per_group.iter_mut().find(|(g, _, _)| *g == d.group) {
                Some((_, _, total)) => *total += 1,
                None => per_group.push((d.group.clone(), 0, 1)),
            }
        }
        for &i in set {
            if let Some((_, n, _)) = per_group.iter_mut().find(|(g, _, _)| *g == dimensions[i].group) {
                *n += 1;
            }
        }
        let parts: Vec<String> =
            per_group.iter().filter(|(_, n, _)| *n > 0).map(|(g, n, total)| format!("{g} {n}/{total}")).collect();
        format!("{} differences: {} (cell {})", set.len(), parts.join(", "), position + 1)
    };
    CellSpec { name, profile, overlay }
}

/// A change's text as a cell's name holds it: at most 40 characters.
pub fn shortened(text: &str) -> String {
    if text.chars().count() <= 40 {
        return text.to_owned();
    }
    format!("{}...", text.chars().take(37).collect::<String>())
}

/// The set of dimensions a recorded cell applied, read back from its overlay and profile.
pub fn set_of(dimensions: &[Dimension], cell: &CellSpec) -> Vec<usize> {
    let cpus = cell.profile.as_ref().and_then(|p| p.knobs.cpus);
    (0..dimensions.len())
        .filter(|&i| match &dimensions[i].change {
            Change::Cpus { count } => cpus == Some(*count),
            change => change.setting().is_some_and(|s| cell.overlay.contains(&s)),
        })
        .collect()
}

/// Counts of one cell.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    issued: u64,
    finished: u64,
    failures: u64,
}

/// The plan of `matrix --against`: this machine and every difference at once, interleaved,
/// then the search, one cell at a time (each cell's attempts up to `--jobs` at once).
#[derive(Debug)]
pub struct AgainstPlan {
    dimensions: Vec<Dimension>,
    runs: u64,
    confirm: u64,
    cells: Vec<CellSpec>,
    sets: Vec<Vec<usize>>,
    counts: Vec<Counts>,
    /// Recorded attempts of cells the search has not reached yet in a replay.
    pending: Vec<Attempt>,
    next_id: u64,
}

impl AgainstPlan {
    /// The plan over `dimensions`, each cell run `runs` times, a single failure confirmed up to
    /// `confirm` more. Its first two cells are this machine and every difference (only the
    /// first when there is no difference to apply).
    pub fn new(dimensions: Vec<Dimension>, runs: u64, confirm: u64) -> Self {
        let mut plan = Self {
            dimensions,
            runs: runs.max(1),
            confirm,
            cells: Vec::new(),
            sets: Vec::new(),
            counts: Vec::new(),
            pending: Vec::new(),
            next_id: 0,
        };
        plan.add(Vec::new());
        if !plan.dimensions.is_empty() {
            plan.add((0..plan.dimensions.len()).collect());
        }
        plan
    }

    /// The first cells of a new plan, for the manifest.
    pub fn first_cells(dimensions: &[Dimension]) -> Vec<CellSpec> {
        Self::new(dimensions.to_vec(), 1, 0).cells
    }

    fn add(&mut self, set: Vec<usize>) {
        self.cells.push(cell_of(&self.dimensions, &set, self.cells.len()));
        self.sets.push(set);
        self.counts.push(Counts::default());
    }

    fn decision(&self, cell: usize) -> Option<bool> {
        let c = self.counts[cell];
        let settled = c.issued <= c.finished;
        match decided(c.finished, c.failures, self.runs, self.confirm) {
            Some(true) => Some(true),
            Some(false) if settled => Some(false),
            _ => None,
        }
    }

    /// Where the search stands on what the plan knows.
    pub fn search(&self) -> Search {
        if self.dimensions.is_empty() {
            return Search::NothingToTry;
        }
        let known = |set: &[usize]| self.sets.iter().position(|s| s == set).and_then(|i| self.decision(i));
        search(&self.dimensions, &known)
    }

    /// Adds the cell of the search's next question, if it is new.
    fn advance(&mut self) {
        if let Search::Ask(set) = self.search() {
            if !self.sets.contains(&set) {
                self.add(set);
            }
        }
    }

    /// The next attempt of `cell` if it needs one.
    fn attempt_of(&mut self, cell: usize) -> Option<AttemptSpec> {
        let c = self.counts[cell];
        let limit = match c.failures {
            0 => self.runs,
            1 => self.runs + self.confirm,
            _ => return None,
        };
        if c.issued >= limit {
            return None;
        }
        let iteration = c.issued + 1;
        self.counts[cell].issued += 1;
        let id = self.next_id;
        self.next_id += 1;
        let phase = if iteration > self.runs {
            Some("confirm".to_owned())
        } else if cell >= 2 {
            Some("minimize".to_owned())
        } else {
            None
        };
        Some(AttemptSpec { id, cell, iteration, phase, cold: false })
    }

    fn count(&mut self, cell: usize, attempt: &Attempt) {
        let c = &mut self.counts[cell];
        c.finished += 1;
        c.issued = c.issued.max(c.finished);
        if attempt.outcome.is_failure() {
            c.failures += 1;
        }
    }
}

impl Plan for AgainstPlan {
    fn cells(&self) -> &[CellSpec] {
        &self.cells
    }

    fn next(&mut self) -> Next {
        if self.dimensions.is_empty() {
            return Next::Done;
        }
        let first: Vec<usize> = (0..self.cells.len().min(2)).collect();
        if first.iter().any(|&c| self.decision(c).is_none()) && !matches!(self.search(), Search::FailsHere) {
            // The two first cells side by side: the one with fewer attempts issued next.
            let mut order = first.clone();
            order.sort_by_key(|&c| self.counts[c].issued);
            for cell in order {
                if self.decision(cell).is_none() {
                    if let Some(spec) = self.attempt_of(cell) {
                        return Next::Run(spec);
                    }
                }
            }
            return Next::Wait;
        }
        match self.search() {
            Search::Ask(set) => match self.sets.iter().position(|s| *s == set) {
                Some(cell) => match self.attempt_of(cell) {
                    Some(spec) => Next::Run(spec),
                    None => Next::Wait,
                },
                None => Next::Wait,
            },
            _ => Next::Done,
        }
    }

    fn observe(&mut self, attempt: &Attempt) {
        self.next_id = self.next_id.max(attempt.id + 1);
        match self.cells.iter().position(|c| c.name == attempt.cell) {
            Some(cell) => self.count(cell, attempt),
            None => {
                self.pending.push(attempt.clone());
                return;
            }
        }
        loop {
            self.advance();
            let before = self.pending.len();
            let pending = std::mem::take(&mut self.pending);
            for a in pending {
                match self.cells.iter().position(|c| c.name == a.cell) {
                    Some(cell) => self.count(cell, &a),
                    None => self.pending.push(a),
                }
            }
            if self.pending.len() == before {
                break;
            }
        }
    }

    fn planned(&self) -> u64 {
        // The search plans as it goes: what its cells ran once decided, and at least `runs`
        // for each cell still open.
        (0..self.cells.len())
            .map(|i| match self.decision(i) {
                Some(_) => self.counts[i].issued,
                None => self.counts[i].issued.max(self.runs),
            })
            .sum()
    }
}

/// The changes of a set, for documents: each as its cell's name writes it (`TZ` ->
/// `America/New_York`, `nofile` -> `1024`, `cpus` -> `2`).
pub fn change_map(dimensions: &[Dimension], set: &[usize]) -> BTreeMap<String, String> {
    set.iter()
        .map(|&i| {
            let text = dimensions[i].change.text();
            match text.split_once('=') {
                Some((name, value)) => (name.to_owned(), value.to_owned()),
                None => (text, String::new()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
