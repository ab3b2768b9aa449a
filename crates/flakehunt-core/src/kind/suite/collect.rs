//! Collection: the test ids a runner lists, read from its output once per hunt. Pure functions
//! over the text: [`go_test_names`], [`libtest_names`]. pytest's collection is read from what
//! flakehunt's plugin wrote ([`super::pytestlog::Collected`]), not from its output, which a
//! project's options change.

use super::TestId;

/// The top-level tests `BIN -test.list .` printed: one a line. Examples, benchmarks and fuzz
/// targets are listed too; only `Test...` names are tests an attempt runs (`-test.run` does
/// not run benchmarks, and fuzz targets run only their seed corpus, which is left out here).
pub fn go_test_names(output: &str) -> Vec<TestId> {
    output
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("Test") && !l.contains(char::is_whitespace))
        .map(str::to_owned)
        .collect()
}

/// The tests `TEST_BINARY --list` printed (the default `pretty` and the `terse` format both
/// write `name: test`); benchmarks (`name: benchmark`) are left out.
pub fn libtest_names(output: &str) -> Vec<TestId> {
    output.lines().filter_map(|l| l.strip_suffix(": test")).map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_list_keeps_tests_only() {
        let out = "TestPolluter\nTestVictim\nBenchmarkSum\nExampleHello\nFuzzParse\nok  \texample.com/x\t0.003s\n";
        assert_eq!(go_test_names(out), ["TestPolluter", "TestVictim"]);
    }

    #[test]
    fn libtest_list_keeps_tests_in_both_formats() {
        let pretty = "tests::a: test\ntests::b: test\nbench_x: benchmark\n\n2 tests, 1 benchmark\n";
        assert_eq!(libtest_names(pretty), ["tests::a", "tests::b"]);
        let doc = "src/lib.rs - add (line 3): test\n";
        assert_eq!(libtest_names(doc), ["src/lib.rs - add (line 3)"]);
    }
}
