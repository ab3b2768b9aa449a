//! Ctrl-C and friends: the first SIGINT, SIGTERM or SIGHUP asks the hunt to stop gracefully, the
//! second to kill at once. Attempts run in their own process groups, outside the terminal's
//! foreground group, so they never see the terminal's signals: the runner ends them itself.

use std::sync::Arc;

use flakehunt_core::exec::Cancel;

/// Routes the termination signals to `cancel`.
pub fn install(cancel: &Arc<Cancel>) -> anyhow::Result<()> {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        let cancel = Arc::clone(cancel);
        // SAFETY: `Cancel::request` is async-signal-safe (an atomic add and a write to a pipe).
        unsafe { signal_hook::low_level::register(sig, move || cancel.request()) }?;
    }
    // Attempts reset these handlers before they exec.
    flakehunt_core::exec::note_signal_handlers();
    Ok(())
}
