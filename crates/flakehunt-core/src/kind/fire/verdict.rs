//! A level's verdict: did the command survive running concurrently with itself? Main type:
//! [`Verdict`].

pub use crate::schema::fire::Verdict;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_of_the_design() {
        assert_eq!(Verdict::of(false, false), Verdict::Accept);
        assert_eq!(Verdict::of(false, true), Verdict::RejectSilentCorruption);
        assert_eq!(Verdict::of(true, false), Verdict::RejectLoad);
        assert_eq!(Verdict::of(true, true), Verdict::RejectRaceCrash);
        for v in [Verdict::Accept, Verdict::RejectSilentCorruption, Verdict::RejectLoad, Verdict::RejectRaceCrash] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.name());
            assert_eq!(v.is_reject(), v != Verdict::Accept);
        }
    }
}
