//! What every hunt sets up around its attempts: the process tree (flakehunt as subreaper), the
//! watchdog that ends attempts if flakehunt dies, the cancellation the termination signals
//! trigger, the profiles' shared state, a matrix's clean rooms (one per cell, made before the
//! first attempt) and the oracles. Main type: [`Session`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::cleanroom::{CleanRoom, RoomOptions};
use crate::copy::CopyOptions;
use crate::events::{Event, EventSink};
use crate::exec::{Cancel, Limits, ProcessTree, Watchdog};
use crate::oracle::Oracle;
use crate::plan::CheckSettings;
use crate::profile::ProfileEnv;
use crate::record::Manifest;
use crate::runner::{AttemptRunner, Room};
use crate::snapshot::{Snapshot, SnapshotRequest};
use crate::spec::HuntError;

/// The set-up of one hunt, ended by [`Session::finish`].
pub struct Session {
    /// The process tree bookkeeping, shared with the snapshot's thread.
    pub tree: Arc<ProcessTree>,
    /// The watchdog, when it could be started.
    pub watchdog: Option<Watchdog>,
    /// Cancellation, wired to the termination signals.
    pub cancel: Arc<Cancel>,
    /// What the hunt's profiles share.
    pub profiles: ProfileEnv,
    /// Matrix clean rooms by cell name.
    pub rooms: BTreeMap<String, Room>,
    /// The hunt's oracles beyond the exit code.
    pub oracle: Option<Oracle>,
    /// The plan's durations, checked.
    pub durations: crate::plan::Durations,
    /// The checks of failures the exit status hides, when the plan has any.
    pub checks: Option<crate::checks::CheckRun>,
    _kept_rooms: Vec<CleanRoom>,
    /// Declared last: dropped once the directories it tracks are removed.
    _tracked: Option<crate::exec::TrackedDir>,
}

/// How long a hunt waits for the watchdog of an earlier run of it to finish its cleanup.
const WATCHDOG_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl Session {
    /// Sets up the session of the hunt `manifest` describes; clean rooms are announced to `sink`.
    pub fn start(manifest: &Manifest, sink: &mut dyn EventSink) -> Result<Self, HuntError> {
        // Checked again here, before anything starts, for a record edited since it was opened.
        let durations = manifest.plan.check().map_err(HuntError::DamagedPlan)?;
        let tree = Arc::new(ProcessTree::default());
        ProcessTree::become_subreaper();
        let exe = std::env::current_exe()
            .map_err(|e| HuntError::io("cannot find flakehunt's own executable for its watchdog", e))?;
        // A resumed hunt keeps its run id: the killed run's watchdog, still cleaning up, would
        // end this run's attempts and remove its sandboxes.
        if !crate::exec::wait_for_previous(&manifest.run_id, WATCHDOG_WAIT) {
            return Err(HuntError::Usage(format!(
                "the watchdog of an earlier run of {} is still cleaning up after {} s: wait for it to end (or kill it), then resume",
                manifest.run_id,
                WATCHDOG_WAIT.as_secs()
            )));
        }
        let watchdog = Watchdog::spawn(&exe, &manifest.run_id).ok();
        if let Some(w) = &watchdog {
            tree.register(w.pid());
        }
        let cancel = Arc::new(Cancel::new().map_err(|e| HuntError::io("cannot create the cancellation pipe", e))?);
        install_signals(&cancel)?;
        let mut profiles = ProfileEnv::new(&manifest.run_id, manifest.seed, manifest.target.looks_like_python())
            .with_tracker(watchdog.as_ref().map(Watchdog::tracker));
        // The adaptive hunt's and the sweep's plans start a copies=N cell's N attempts together.
        profiles.copies_scheduled = crate::plan::schedules_copies(manifest.kind);
        let (rooms, kept) = clean_rooms(manifest, sink, watchdog.as_ref())?;
        let oracle = manifest.oracle.as_ref().and_then(Oracle::new);
        let checks = crate::checks::CheckRun::new(
            manifest.plan.checks,
            manifest.target.dir.as_deref().unwrap_or(std::path::Path::new(".")),
        )
        .map_err(|e| HuntError::io("cannot create the checks' directory", e))?;
        // Removed by the watchdog if flakehunt dies.
        let tracked = checks.as_ref().zip(watchdog.as_ref()).map(|(c, w)| w.tracker().track(c.dir()));
        Ok(Self {
            tree,
            watchdog,
            cancel,
            profiles,
            rooms,
            oracle,
            durations,
            checks,
            _kept_rooms: kept,
            _tracked: tracked,
        })
    }

    /// The attempt runner of `manifest`'s target and limits.
    pub fn attempts(&self, manifest: &Manifest, leak_timeout: Duration) -> AttemptRunner<'_> {
        let p = &manifest.plan;
        let limits = Limits {
            timeout: self.durations.timeout,
            judge_timeout: !p.user_timeout(),
            grace: self.durations.grace,
            capture_cap: usize::try_from(p.capture_bytes).unwrap_or(usize::MAX),
            stdout_mask: self.oracle.as_ref().and_then(Oracle::mask),
            leak_timeout,
            ..Limits::default()
        };
        AttemptRunner {
            run_id: manifest.run_id.clone(),
            target: manifest.target.clone(),
            limits,
            env: Vec::new(),
            env_clear: false,
            cwd: None,
            tree: &self.tree,
            watchdog: self.watchdog.as_ref(),
            cancel: &self.cancel,
            profiles: &self.profiles,
            rooms: &self.rooms,
            oracle: self.oracle.as_ref(),
            warm: None,
            checks: self.checks.as_ref(),
            stops_on_no_test: matches!(manifest.kind, crate::record::Kind::Adaptive | crate::record::Kind::Sweep)
                && manifest.extra.adapter.is_none()
                && manifest.extra.suite.is_none(),
        }
    }

    /// The warm parents of a hunt whose plan runs warm, none otherwise. Ended with
    /// [`crate::warm::WarmCells::end`] before the session finishes.
    pub fn warm_cells(&self, manifest: &Manifest) -> Option<crate::warm::WarmCells<'_>> {
        let plan = manifest.plan.warm.as_ref()?;
        Some(crate::warm::WarmCells::new(&self.tree, self.warm_options(plan)))
    }

    /// The warm parents of a hunt whose plan runs warm, each running `target` rather than the
    /// manifest's (a pytest suite's parents collect the whole selection once), none otherwise.
    pub fn warm_cells_of(
        &self,
        manifest: &Manifest,
        target: crate::warm::WarmTarget,
    ) -> Option<crate::warm::WarmCells<'_>> {
        let plan = manifest.plan.warm.as_ref()?;
        let options = crate::warm::WarmOptions { target: Some(target), ..self.warm_options(plan) };
        Some(crate::warm::WarmCells::new(&self.tree, options))
    }

    /// The warm options of the plan, with the watchdog told of each parent's directory.
    pub fn warm_options(&self, plan: &crate::plan::WarmPlan) -> crate::warm::WarmOptions {
        let dirs = self.watchdog.as_ref().map(Watchdog::tracker);
        crate::warm::WarmOptions { dirs, ..crate::warm::WarmOptions::of_plan(plan) }
    }

    /// Captures the environment snapshot on a thread while the hunt runs; its tool commands
    /// are registered as flakehunt's own, so no attempt's sweep takes them for leaks.
    /// The tool commands carry the hunt's `FLAKEHUNT_RUN_ID`, so the watchdog ends one still
    /// running if flakehunt is killed.
    pub fn snapshot(&self, request: SnapshotRequest, run_id: &str) -> std::thread::JoinHandle<Snapshot> {
        let tree = Arc::clone(&self.tree);
        let run_id = run_id.to_owned();
        std::thread::spawn(move || Snapshot::capture_in(&request, Some(&tree), Some(&run_id)))
    }

    /// Ends whatever is left and lets the watchdog go.
    pub fn finish(&self) {
        self.tree.kill_all_unknown();
        if let Some(w) = &self.watchdog {
            w.finish();
        }
    }
}

/// The clean rooms a matrix manifest asks for, one per cell, prepared before the hunt (and the
/// rooms themselves, which must live as long as the hunt). The `watchdog` removes them if
/// flakehunt dies.
fn clean_rooms(
    manifest: &Manifest,
    sink: &mut dyn EventSink,
    watchdog: Option<&Watchdog>,
) -> Result<(BTreeMap<String, Room>, Vec<CleanRoom>), HuntError> {
    let Some(spec) = manifest.extra.matrix.as_ref().and_then(|m| m.clean_room.as_ref()) else {
        return Ok((BTreeMap::new(), Vec::new()));
    };
    let options = RoomOptions {
        setup: spec.setup.as_deref(),
        keep_env: &spec.keep_env,
        copy: CopyOptions { follow_outside_links: spec.follow_outside_links },
        watchdog,
        run_id: Some(&manifest.run_id),
    };
    let mut rooms = BTreeMap::new();
    let mut owned = Vec::new();
    for (i, cell) in manifest.cells.iter().enumerate() {
        sink.event(&Event::CleanRoomReady { index: i + 1, of: manifest.cells.len(), cell: &cell.name })?;
        let room = CleanRoom::create(&spec.project, &options)?;
        rooms.insert(cell.name.clone(), Room { cwd: room.dir(), env: room.env().to_vec() });
        owned.push(room);
    }
    if spec.keep {
        let kept: Vec<String> = owned.into_iter().map(|r| r.keep().display().to_string()).collect();
        sink.event(&Event::CleanRoomsKept(&kept))?;
        return Ok((rooms, Vec::new()));
    }
    Ok((rooms, owned))
}

/// Routes SIGINT, SIGTERM and SIGHUP to `cancel`: the first asks the hunt to stop gracefully,
/// the second to kill at once. Attempts run in their own process groups, outside the terminal's
/// foreground group, so they never see the terminal's signals: the runner ends them itself.
fn install_signals(cancel: &Arc<Cancel>) -> Result<(), HuntError> {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        let cancel = Arc::clone(cancel);
        // SAFETY: `Cancel::request` is async-signal-safe (an atomic add and a write to a pipe).
        unsafe { signal_hook::low_level::register(sig, move || cancel.request()) }
            .map_err(|e| HuntError::io("cannot handle the termination signals", e))?;
    }
    // Attempts reset these handlers before they exec.
    crate::exec::note_signal_handlers();
    Ok(())
}
