//! Collection: the test ids a runner lists, read from its output once per hunt. Pure functions
//! over the text: [`pytest_node_ids`], [`go_test_names`], [`libtest_names`].

use super::{ParseError, TestId};

/// The node ids `python -m pytest --collect-only -q` printed: one a line, before the first
/// blank line (after it come the warnings summary and the count). A collection error (pytest
/// prints `ERROR path` lines and `Interrupted: N error during collection`) is an error naming
/// the first file that failed, because running the rest would hide that file's tests.
pub fn pytest_node_ids(output: &str) -> Result<Vec<TestId>, ParseError> {
    if let Some(line) = output.lines().find(|l| l.starts_with("ERROR ")) {
        return Err(ParseError::Collection(format!("pytest could not collect {}", line["ERROR ".len()..].trim())));
    }
    if let Some(line) = output.lines().find(|l| l.contains("Interrupted: ") && l.contains("during collection")) {
        return Err(ParseError::Collection(line.trim_matches(|c: char| c == '!' || c.is_whitespace()).to_owned()));
    }
    Ok(output
        .lines()
        .take_while(|l| !l.trim().is_empty())
        // Every item's node id has `path::name`; a plugin's banner line has not.
        .filter(|l| l.contains("::") && !l.starts_with(char::is_whitespace))
        .map(str::to_owned)
        .collect())
}

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
    fn pytest_ids_stop_at_the_blank_line_before_warnings_and_the_count() {
        // pytest 9.2's output for a file with a warning at import.
        let out = "test_ok.py::test_a\ntest_warn.py::test_c\ntests/t.py::TestK::test_m[a b-1]\n\n\
                   =============================== warnings summary ===============================\n\
                   test_warn.py:2\n  /tmp/pc/test_warn.py:2: UserWarning: w\n    warnings.warn(\"w\")\n\n\
                   -- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html\n\
                   3 tests collected in 0.01s\n";
        assert_eq!(
            pytest_node_ids(out).unwrap(),
            ["test_ok.py::test_a", "test_warn.py::test_c", "tests/t.py::TestK::test_m[a b-1]"]
        );
        assert_eq!(pytest_node_ids("\nno tests collected in 0.00s\n").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn pytest_collection_errors_name_the_file() {
        let out = "test_ok.py::test_a\n\n==================================== ERRORS ====================================\n\
                   _________________________ ERROR collecting test_bad.py _________________________\n\
                   E   ModuleNotFoundError: No module named 'nope'\n\
                   =========================== short test summary info ============================\n\
                   ERROR test_bad.py\n!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n\
                   1 test collected, 1 error in 0.47s\n";
        let err = pytest_node_ids(out).unwrap_err().to_string();
        assert_eq!(err, "collection failed: pytest could not collect test_bad.py");
        let err = pytest_node_ids("!!! Interrupted: 2 errors during collection !!!\n").unwrap_err().to_string();
        assert_eq!(err, "collection failed: Interrupted: 2 errors during collection");
    }

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
