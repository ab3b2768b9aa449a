//! The warm cells of one hunt, by cell name: a cell's parent is started by its first attempt,
//! since the cell's profile and overlay (its `PYTHONPATH`, its variables read at start-up) are
//! the parent's too. Main type: [`WarmCells`].

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::{Arc, Mutex};

use super::{Start, WarmCell, WarmOptions};
use crate::exec::{Launch, ProcessTree};

/// The warm cells of a hunt, and the reasons to run cold already said (each once per hunt,
/// however many cells meet it).
pub struct WarmCells<'t> {
    tree: &'t ProcessTree,
    options: WarmOptions,
    cells: Mutex<BTreeMap<String, Arc<WarmCell<'t>>>>,
    said: Mutex<BTreeSet<String>>,
}

/// The runner's view of [`WarmCells`]: a trait object, so that an attempt runner borrows the
/// cells for less time than they borrow the process tree (the cells end their parents when
/// dropped, which the tree must outlive).
pub trait WarmStart: Sync + std::fmt::Debug {
    /// As [`WarmCells::start`].
    fn start<'s>(&'s self, cell: &str, launch: &Launch, marker: &str) -> io::Result<Start<'s>>;
}

impl WarmStart for WarmCells<'_> {
    fn start<'s>(&'s self, cell: &str, launch: &Launch, marker: &str) -> io::Result<Start<'s>> {
        WarmCells::start(self, cell, launch, marker)
    }
}

impl std::fmt::Debug for WarmCells<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cells = self.cells.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("WarmCells").field("cells", &cells.keys().collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

impl<'t> WarmCells<'t> {
    /// No cell started yet.
    pub fn new(tree: &'t ProcessTree, options: WarmOptions) -> Self {
        Self { tree, options, cells: Mutex::default(), said: Mutex::default() }
    }

    /// Starts an attempt of `cell` warm if it can, as [`WarmCell::start`]; a reason to run cold
    /// is given the first time the hunt meets it.
    pub fn start(&self, cell: &str, launch: &Launch, marker: &str) -> io::Result<Start<'t>> {
        let warm = {
            let mut cells = self.cells.lock().unwrap_or_else(|e| e.into_inner());
            match cells.get(cell) {
                Some(c) => Arc::clone(c),
                None => {
                    let c = Arc::new(WarmCell::new(self.tree, self.options.clone()));
                    cells.insert(cell.to_owned(), Arc::clone(&c));
                    c
                }
            }
        };
        Ok(match warm.start(launch, marker.to_owned())? {
            Start::Cold { say: Some(reason), lost } => {
                let first = self.said.lock().unwrap_or_else(|e| e.into_inner()).insert(reason.clone());
                Start::Cold { say: first.then_some(reason), lost }
            }
            other => other,
        })
    }

    /// Ends every warm parent (each once its last attempt has been reaped).
    pub fn end(&self) {
        self.cells.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
