//! What redaction costs on what it is applied to: an attempt's output tail (4 KiB) and a kept
//! log (1 MiB), without secrets (the common case) and with a few, then again with the values of
//! secret-named variables looked for too. Prints microseconds per call;
//! run it in release: `scripts/bench-redact.sh`.

use std::time::Instant;

use flakehunt_core::redact;

/// Test-runner-like output: paths, line numbers, hashes, `key=value` pairs that are not secret.
fn plain(bytes: usize) -> String {
    let lines = [
        "test ledger::transfer::concurrent_debits ... ok\n",
        "running 42 tests from /home/ci/work/ledger/src/transfer.rs:118:9\n",
        "thread 'auth::tests::login' panicked at src/auth.rs:10:5: assertion failed: left == right\n",
        "GET https://api.example.com/v1/items?page=2&per_page=50 -> 200 in 12ms\n",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b id=123e4567-e89b-12d3-a456-426614174000\n",
        "pass=41 fail=1 skipped=0 seed=12345 PATH=/usr/local/bin:/usr/bin:/bin\n",
    ];
    let mut out = String::with_capacity(bytes + 128);
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(lines[i % lines.len()]);
        i += 1;
    }
    out.truncate(bytes);
    out
}

/// The same with a secret of a different family every 1 KiB.
fn with_secrets(bytes: usize) -> String {
    let secrets = [
        "DATABASE_URL=postgres://app:hunter2@db:5432/app\n",
        "login with --password s3cret and token=abc123\n",
        "GITHUB_TOKEN ghp_0123456789abcdefghijABCDEFGHIJ012345\n",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl\n",
    ];
    let base = plain(bytes);
    let mut out = String::with_capacity(bytes + 256);
    for (i, chunk) in base.as_bytes().chunks(1024).enumerate() {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push_str(secrets[i % secrets.len()]);
    }
    out
}

fn time(label: &str, input: &str, rounds: u32) {
    // The first call compiles the patterns: shown apart, it is paid once per process.
    let start = Instant::now();
    let mut changed = 0usize;
    for _ in 0..rounds {
        changed += usize::from(matches!(redact::text(input), std::borrow::Cow::Owned(_)));
    }
    let per_call = start.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
    println!("{label:<28} {:>9} bytes  {per_call:>10.1} us per call  (redacted: {})", input.len(), changed > 0);
}

fn main() {
    let start = Instant::now();
    let _ = redact::text("warm up");
    println!(
        "{:<28} {:>9}        {:>10.1} us once per process",
        "compiling the patterns",
        "",
        start.elapsed().as_secs_f64() * 1e6
    );
    time("4 KiB tail, no secret", &plain(4096), 2000);
    time("4 KiB tail, 4 secrets", &with_secrets(4096), 2000);
    time("1 MiB log, no secret", &plain(1 << 20), 20);
    time("1 MiB log, a secret per KiB", &with_secrets(1 << 20), 5);
    // The values of secret-named variables a CI machine typically has (a token, a database
    // password, cloud keys, a webhook...), looked for literally in everything redacted.
    let values: Vec<String> = (0..12).map(|i| format!("Cr3dValue-{i:02}-{}", "x".repeat(8 + i))).collect();
    redact::add_secret_values(values);
    println!("with 12 values of secret-named variables looked for:");
    time("4 KiB tail, no secret", &plain(4096), 2000);
    time("4 KiB tail, 4 secrets", &with_secrets(4096), 2000);
    time("1 MiB log, no secret", &plain(1 << 20), 20);
    time("1 MiB log, a secret per KiB", &with_secrets(1 << 20), 5);
}
