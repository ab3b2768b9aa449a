//! What a fire hunt was asked to do, as recorded in the manifest's `extra`, so that `report`
//! can rebuild the ladder's summary from the record alone. Main type: [`FireOptions`].

pub use crate::schema::fire::FireOptions;

/// The cell name of the sequential reference for `runs` invocations.
pub fn reference_cell(runs: u64) -> String {
    format!("reference-{runs}")
}

/// Directory of the record where sandboxes are created (and kept with `--keep`).
pub const SANDBOXES: &str = "sandboxes";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::fire::{Ladder, ParseLadder};

    #[test]
    fn planned_runs_count_one_reference_per_run_count() {
        let options = FireOptions {
            ladder: Ladder::parse("2x10,4x10,8x40").unwrap(),
            state: None,
            ignore: vec![],
            ignore_columns: vec![],
            checks: vec![],
            trace_tokens: false,
            all_levels: false,
            keep: false,
            follow_outside_links: false,
        };
        assert_eq!(options.planned_runs(1), 20);
        assert_eq!(options.planned_runs(2), 30);
        assert_eq!(options.planned_runs(3), 110);
        let json = serde_json::to_value(&options).unwrap();
        assert_eq!(
            json["ladder"],
            serde_json::json!([{"workers": 2, "runs": 10}, {"workers": 4, "runs": 10}, {"workers": 8, "runs": 40}])
        );
        assert_eq!(FireOptions::from_extra(&json), Some(options));
    }
}
