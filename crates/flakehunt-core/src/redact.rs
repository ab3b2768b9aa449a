//! Removing secrets from what flakehunt writes: run records, logs, reports and generated job
//! files. Redaction is by the NAME of an environment variable ([`is_secret_name`]) and by the
//! shape of a VALUE anywhere in text ([`text`]: private key blocks, URL passwords, `password=`
//! pairs, `--token X` arguments, well-known token formats).
//!
//! Only what flakehunt writes is redacted: the target still gets its real environment and argv.
//! A false positive costs a debugging detail, a false negative leaks a secret into a bug report,
//! so every doubtful case is redacted. Patterns are compiled once, each starts with a literal the
//! regex engine finds fast, and text without secrets (nearly all of it) is not copied.

pub mod ids;

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;

use regex::bytes::{Captures, Regex};

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// Whether this process redacts what it writes (`--no-redact` turns it off).
///
/// A process-wide policy rather than a parameter: it is decided once from the command line,
/// before anything is written, and it applies to every writer alike (record, logs, snapshot,
/// reports, generated files), many of which are far from the command line.
static DISABLED: AtomicBool = AtomicBool::new(false);

/// Whether redaction is on (it is unless [`set_enabled`]`(false)` was called).
pub fn enabled() -> bool {
    !DISABLED.load(Ordering::Relaxed)
}

/// Turns redaction on or off for this process (`--no-redact`).
pub fn set_enabled(on: bool) {
    DISABLED.store(!on, Ordering::Relaxed);
}

/// Fragments that make an environment variable's name secret, anywhere in one of its words.
const NAME_FRAGMENTS: &[&str] = &[
    "PASS",
    "PWD",
    "SECRET",
    "TOKEN",
    "KEY",
    "DSN",
    "WEBHOOK",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
    "JWT",
    "PRIVATE",
    "CREDS",
];

/// Words that hold a fragment but name no secret: keyboards (`KEYBOARD_LAYOUT`, `XKB_KEYMAP`),
/// test counts (`PASSED`), `BYPASS`, `GIT_AUTHOR_NAME`, Hugging Face's `TOKENIZERS_PARALLELISM`.
const HARMLESS_WORDS: &[&str] = &[
    "KEYBOARD",
    "KEYBOARDS",
    "KEYMAP",
    "KEYMAPS",
    "KEYCODE",
    "KEYCODES",
    "KEYSYM",
    "KEYSYMS",
    "KEYPAD",
    "PASSED",
    "PASSES",
    "PASSING",
    "BYPASS",
    "PASSTHROUGH",
    "PASSTHRU",
    "COMPASS",
    "AUTHOR",
    "AUTHORS",
    "TOKENIZER",
    "TOKENIZERS",
];

/// Whole names that match a fragment but hold no secret: `PWD` and `OLDPWD` are paths (their
/// values are still scanned), the desktop session's kind, AWS's region and profile.
const HARMLESS_NAMES: &[&str] = &[
    "PWD",
    "OLDPWD",
    "XDG_SESSION_TYPE",
    "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP",
    "XDG_SESSION_ID",
    "DESKTOP_SESSION",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
];

/// Whether the value of an environment variable called `name` is a secret as a whole.
///
/// A name is secret when one of its words (split on anything but letters and digits, compared
/// case-insensitively) contains `PASS`, `PWD`, `SECRET`, `TOKEN`, `KEY`, `DSN`, `WEBHOOK`,
/// `CREDENTIAL`, `CREDS`, `AUTH`, `COOKIE`, `SESSION`, `JWT` or `PRIVATE`, or is `PAT` (a personal
/// access token: `GH_PAT`; a fragment would take `PATH`) or `PW` (`DB_PW`; `ROOTPW` ends with it),
/// or `CRED`, or when it starts with `AWS_`. Not
/// secret: `PWD`, `OLDPWD`, a few names of [`HARMLESS_NAMES`], `XKB_*`, and words of
/// [`HARMLESS_WORDS`] (`KEYBOARD`, `PASSED`, `AUTHOR`...).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if HARMLESS_NAMES.contains(&upper.as_str()) || upper.starts_with("XKB_") {
        return false;
    }
    if upper.starts_with("AWS_") {
        return true;
    }
    upper.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).any(|word| {
        !HARMLESS_WORDS.contains(&word)
            && (matches!(word, "PAT" | "CRED")
                || word.ends_with("PW")
                || NAME_FRAGMENTS.iter().any(|f| word.contains(f)))
    })
}

/// The value of the environment variable `name` as it may be written: [`REDACTED`] when the name
/// is secret, else the value with any secret it holds redacted.
pub fn env_value<'a>(name: &str, value: &'a str) -> Cow<'a, str> {
    if is_secret_name(name) {
        Cow::Borrowed(REDACTED)
    } else {
        text(value)
    }
}

/// Keys whose value is secret after a `:` (`"password": "x"`, `Authorization: Bearer x`): a
/// narrower list than after `=`, because `KeyError: 'x'` and `session: 3` are ordinary output.
const COLON_KEYS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "access_key",
    "secret_key",
    "private_key",
    "credential",
    "credentials",
    "authorization",
    "auth",
    "cookie",
    "dsn",
    "jwt",
    "webhook",
    "webhook_url",
];

/// Whether the value after `key=` (or `key: `) is secret.
fn is_secret_key(key: &str, colon: bool, value: &[u8]) -> bool {
    let key = key.trim_start_matches(['-', '$', '"', '\'']);
    let lower = key.to_ascii_lowercase();
    if colon {
        return COLON_KEYS.iter().any(|k| lower.ends_with(k));
    }
    match lower.as_str() {
        // `PWD=/home/me` is a path; `Pwd=x` in a connection string is a password.
        "pwd" | "oldpwd" => !value.starts_with(b"/") && !value.starts_with(b"~"),
        // `pass=3 fail=0` and `key=3` are counts and indexes; `pass=hunter2` is not.
        "pass" | "key" | "keys" => !value.iter().all(u8::is_ascii_digit),
        "sig" => true,
        // A count or a limit (`max_tokens=100`, `num_keys=5`, `session_timeout=30`): a number
        // under a plural or a measuring word is what the name says, not a secret.
        _ if value.iter().all(u8::is_ascii_digit) && is_count_key(&lower) => false,
        _ => lower.ends_with("signature") || is_secret_name(key),
    }
}

/// Whether a key names a count, a size or a limit rather than a secret (`max_tokens`,
/// `num_keys`, `session_timeout`): a plural last word, or a measuring word in it.
fn is_count_key(lower: &str) -> bool {
    const MEASURES: &[&str] = &["max", "min", "num", "count", "limit", "size", "len", "length", "ttl", "timeout"];
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    words.last().is_some_and(|w| w.len() > 3 && w.ends_with('s') && !w.ends_with("ss"))
        || words.iter().any(|w| MEASURES.contains(w))
}

/// A `password X` of a `.netrc` file (`machine h login u password X`, on one line or spread
/// over a few): the word after `password` is the secret there, not in prose ("the password is
/// wrong"), so a `machine`, `login` or `default` word must come first, on this line or one of
/// the two before.
fn netrc_password(c: &Captures<'_>, text: &[u8]) -> Vec<u8> {
    let Some(start) = c.get(0).map(|m| m.start()) else { return c[0].to_vec() };
    let mut from = start;
    for _ in 0..3 {
        from = text[..from].iter().rposition(|b| *b == b'\n').unwrap_or(0);
        if from == 0 {
            break;
        }
    }
    let netrc =
        text[from..start].split(u8::is_ascii_whitespace).any(|w| matches!(w, b"machine" | b"login" | b"default"));
    if netrc {
        keep_prefix(c, text)
    } else {
        c[0].to_vec()
    }
}

/// A pattern and what its matches become.
struct Rule {
    pattern: &'static str,
    replace: Replace,
}

/// How a rule rewrites a match.
enum Replace {
    /// From the match's capture groups and the whole text (for rules that look back before
    /// their match).
    Captures(fn(&Captures<'_>, &[u8]) -> Vec<u8>),
    /// From the matched bytes, where they start and the whole text; `None` leaves the match.
    /// For a rule with many harmless candidates (`pass=3`, `auth.rs:10`): finding a match is
    /// fast, resolving its capture groups is not.
    Span(SpanFn),
}

/// Matched bytes, where they start, the whole text -> the replacement, if any.
type SpanFn = fn(&[u8], usize, &[u8]) -> Option<Vec<u8>>;

/// A `key=value` or `key: value` candidate: the value redacted when the whole key (the match
/// starts inside it) says it is secret.
fn pair(span: &[u8], start: usize, text: &[u8]) -> Option<Vec<u8>> {
    let is_key = |b: &u8| b.is_ascii_alphanumeric() || b"_.-".contains(b);
    let key_end = span.iter().position(|b| !is_key(b)).unwrap_or(span.len());
    // The head as the pattern reads it: the key, a closing quote, blanks, `=` or `:`, blanks.
    let mut i = key_end;
    let blanks = |i: &mut usize| {
        while matches!(span.get(*i), Some(b' ' | b'\t')) {
            *i += 1;
        }
    };
    if matches!(span.get(i), Some(b'"' | b'\'')) {
        i += 1;
    }
    blanks(&mut i);
    let colon = span.get(i) == Some(&b':');
    i += 1;
    blanks(&mut i);
    let (head, value) = span.split_at(i.min(span.len()));
    let before = text[..start].iter().rev().take_while(|b| is_key(b) || **b == b'$').count();
    let mut key = text[start - before..start].to_vec();
    key.extend_from_slice(&span[..key_end]);
    let quoted = value.len() >= 2 && matches!(value[0], b'"' | b'\'');
    let inner = if quoted { &value[1..value.len() - 1] } else { value };
    // `auth.rs:42` and `host:443` are a line and a port, `auth::tests` a Rust path; an empty
    // value has nothing to hide.
    let number = inner.iter().take_while(|b| b.is_ascii_digit()).count();
    let line_or_port = colon && number > 0 && matches!(inner.get(number), None | Some(b'/' | b':'));
    // `Authorization: Bearer <redacted>` was redacted already: the scheme alone is no secret
    // (so what is written can be redacted again, as the terminal does with a record's lines).
    let redacted_scheme = !quoted
        && is_auth_scheme(inner)
        && text[start + span.len()..].trim_ascii_start().starts_with(REDACTED.as_bytes())
        && text.get(start + span.len()).is_some_and(|b| *b == b' ' || *b == b'\t');
    if inner.is_empty()
        || line_or_port
        || redacted_scheme
        || inner.starts_with(b":")
        || !is_secret_key(&String::from_utf8_lossy(&key), colon, inner)
    {
        return None;
    }
    let mut out = head.to_vec();
    if quoted {
        out.push(value[0]);
        out.extend_from_slice(REDACTED.as_bytes());
        out.push(value[0]);
    } else {
        // The authentication scheme stays readable: `Authorization: Bearer <redacted>`.
        let scheme = value.iter().position(|b| *b == b' ' || *b == b'\t');
        if let Some(space) = scheme {
            out.extend_from_slice(&value[..=space]);
        }
        out.extend_from_slice(REDACTED.as_bytes());
        out.extend_from_slice(closers(&value[scheme.map_or(0, |s| s + 1)..]));
    }
    Some(out)
}

/// The closing brackets that end `word` without an opening one in it: the end of what holds
/// the secret (`test_p[token=X]`, `f(password=X)`), kept after the marker so the text keeps its
/// shape (a test id its `]`).
fn closers(word: &[u8]) -> &[u8] {
    let mut end = word.len();
    while end > 0 && matches!(word[end - 1], b']' | b')' | b'}') {
        let closer = word[end - 1];
        let opener = match closer {
            b']' => b'[',
            b')' => b'(',
            _ => b'{',
        };
        // Balanced within the word (`x[0]`): part of the value.
        let opened = word[..end - 1].iter().filter(|b| **b == opener).count();
        let closed = word[..end - 1].iter().filter(|b| **b == closer).count();
        if opened > closed {
            break;
        }
        end -= 1;
    }
    &word[end..]
}

/// Whether `word` is an HTTP authentication scheme, which [`pair`] keeps before the marker.
fn is_auth_scheme(word: &[u8]) -> bool {
    ["bearer", "basic", "digest", "token", "negotiate"].iter().any(|s| word.eq_ignore_ascii_case(s.as_bytes()))
}

/// `$1` followed by the marker: the readable prefix kept, the secret gone (and the closing
/// brackets that end it, see [`closers`]).
fn keep_prefix(c: &Captures<'_>, _: &[u8]) -> Vec<u8> {
    let prefix = c.get(1).map_or(&b""[..], |m| m.as_bytes());
    let mut out = prefix.to_vec();
    out.extend_from_slice(REDACTED.as_bytes());
    out.extend_from_slice(closers(c[0].get(prefix.len()..).unwrap_or_default()));
    out
}

/// The value rules, in the order they are applied: private keys first (their body would
/// otherwise be taken for other things), then URLs, then pairs and arguments, then token shapes.
/// Every pattern works on bytes without Unicode classes, so logs that are not UTF-8 are
/// redacted too, and every match starts and ends at an ASCII byte, so UTF-8 stays valid.
const RULES: &[Rule] = &[
    // A private key block, possibly cut at the end of a tail (no END line).
    Rule {
        pattern: r"(?s-u)(-----BEGIN ([A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----).*?(-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
        replace: Replace::Captures(|c, _| {
            let mut out = c[1].to_vec();
            out.extend_from_slice(REDACTED.as_bytes());
            out.extend_from_slice(&c[3]);
            out
        }),
    },
    // The end of a private key block whose beginning was cut off (an output tail).
    Rule {
        pattern: r"(?m-u)(?:^[A-Za-z0-9+/=]{16,}\r?\n)+(-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)",
        replace: Replace::Captures(|c, _| {
            let mut out = REDACTED.as_bytes().to_vec();
            out.push(b'\n');
            out.extend_from_slice(&c[1]);
            out
        }),
    },
    // scheme://user:PASSWORD@host: the password runs to the last `@` of the word, so one
    // holding `/` or `@` goes whole. `host:8080/path@x` is a port, not a password.
    Rule {
        pattern: r#"(?-u)([A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@"'<>]*):([^\s"'<>]*)@"#,
        replace: Replace::Captures(|c, _| {
            let password = &c[2];
            let digits = password.iter().take_while(|b| b.is_ascii_digit()).count();
            if password.is_empty() || (digits > 0 && password.get(digits) == Some(&b'/')) {
                return c[0].to_vec();
            }
            let mut out = c[1].to_vec();
            out.push(b':');
            out.extend_from_slice(REDACTED.as_bytes());
            out.push(b'@');
            out
        }),
    },
    // scheme://TOKEN@host: a long user name is a key (Sentry DSNs, `https://TOKEN@github.com`).
    Rule {
        pattern: r"(?-u)([A-Za-z][A-Za-z0-9+.\-]*://)[A-Za-z0-9_\-]{20,}@",
        replace: Replace::Captures(|c, text| {
            let mut out = keep_prefix(c, text);
            out.push(b'@');
            out
        }),
    },
    // user:PASSWORD@host without a scheme (`DB=app:x@db:5432`); not `mailto:a@b`, nor an image
    // digest (`nginx:1.25@sha256:...`). The match starts at the `:` (a literal the search finds
    // fast) and the user is looked for before it.
    Rule {
        pattern: r#"(?-u):([^\s"'<>@:/][^\s"'<>@]*)@([A-Za-z0-9][A-Za-z0-9.\-]*)"#,
        replace: Replace::Captures(|c, text| {
            let Some(colon) = c.get(0).map(|m| m.start()) else { return c[0].to_vec() };
            let user_len =
                text[..colon].iter().rev().take_while(|b| b.is_ascii_alphanumeric() || b"._%+-".contains(b)).count();
            let user = &text[colon - user_len..colon];
            let before = (colon - user_len).checked_sub(1).map(|i| text[i]);
            let bounded = before.is_none_or(|b| b.is_ascii_whitespace() || b"\"'=(,;".contains(&b));
            let host = &c[2];
            if user.is_empty()
                || !bounded
                || user.eq_ignore_ascii_case(b"mailto")
                || host.starts_with(b"sha256")
                || host.starts_with(b"sha512")
            {
                return c[0].to_vec();
            }
            let mut out = b":".to_vec();
            out.extend_from_slice(REDACTED.as_bytes());
            out.push(b'@');
            out.extend_from_slice(host);
            out
        }),
    },
    // key=value and key: value, in query strings (`&`), connection strings (`;`), arguments
    // (`--password=x`), assignments (`DOCKER_PASS=x`), JSON, YAML, headers (`Authorization:
    // Bearer x`). The match starts at the fragment of the key (found fast); the whole key, looked
    // for before it, decides. (One rule for both separators: a rule of its own for `:` made the
    // regex engine scan every `:` of the text, twenty times slower. The secret words are spelt
    // lower, Capitalised and UPPER rather than case-insensitively, which lets the engine find
    // them more than twice as fast; `pAsSwOrD` is not found.)
    Rule {
        pattern: concat!(
            r#"(?-u)(?:"#,
            "pass|Pass|PASS|pw|Pw|PW|secret|Secret|SECRET|token|Token|TOKEN|key|Key|KEY|pat|Pat|PAT|",
            "dsn|Dsn|DSN|webhook|Webhook|WEBHOOK|cred|Cred|CRED|auth|Auth|AUTH|",
            "cookie|Cookie|COOKIE|session|Session|SESSION|jwt|Jwt|JWT|sig|Sig|SIG|private|Private|PRIVATE",
            r#")[A-Za-z0-9_.\-]*["']?[ \t]*[=:][ \t]*(?:"[^"\n]*"|'[^'\n]*'|(?:(?i:bearer|basic|digest|token|negotiate)[ \t]+)?[^\s&;"'<>]+)"#
        ),
        replace: Replace::Span(pair),
    },
    // `--password X`, `-token X`: the next word is the value, or the quoted words
    // (`--secret 'a b'`), also where the option is inside brackets, as in a parametrized test's
    // id (`test_cli[--token X]`) or an argument list (`f(--token X)`). (`-pX`, as mysql takes
    // it, is not recognised: `-p` means too many other things.)
    Rule {
        pattern: r#"(?i-u)((?:^|[\s"'\[(,])--?[A-Za-z0-9_\-]*(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|credentials?|auth)[ \t]+)(?:"[^"\n]+"|'[^'\n]+'|[^\s\-"'<>][^\s"'<>]*)"#,
        replace: Replace::Captures(|c, text| {
            let prefix = c.get(1).map_or(&b""[..], |m| m.as_bytes());
            match c[0].get(prefix.len()) {
                Some(&quote @ (b'"' | b'\'')) => {
                    let mut out = prefix.to_vec();
                    out.push(quote);
                    out.extend_from_slice(REDACTED.as_bytes());
                    out.push(quote);
                    out
                }
                _ => keep_prefix(c, text),
            }
        }),
    },
    // A `.netrc` line: `machine h login u password X`.
    Rule { pattern: r"(?-u)((?:password|Password|PASSWORD)[ \t]+)[^\s]+", replace: Replace::Captures(netrc_password) },
    // `curl -u user:X`, `--user=user:X`, `--proxy-user user:X`: the part after the colon. Not
    // `docker run -u 1000:1000` (a uid and a gid).
    Rule {
        pattern: r#"(?-u)((?:^|[\s"'])(?:-u|-U|--user|--proxy-user)(?:[ \t]+|=)["']?[^\s:"'@\-][^\s:"'@]*:)([^\s"'@]+)"#,
        replace: Replace::Captures(|c, text| {
            if c[2].iter().all(u8::is_ascii_digit) {
                return c[0].to_vec();
            }
            keep_prefix(c, text)
        }),
    },
    // `Bearer X` on its own (a header without its name).
    Rule { pattern: r"(?i-u)(\bbearer[ \t]+)[A-Za-z0-9._~+/=\-]{8,}", replace: Replace::Captures(keep_prefix) },
    // Well-known token formats, their type prefix kept.
    Rule { pattern: r"(?-u)\b(gh[pousr]_)[A-Za-z0-9]{20,}", replace: Replace::Captures(keep_prefix) },
    Rule { pattern: r"(?-u)\b(github_pat_)[A-Za-z0-9_]{20,}", replace: Replace::Captures(keep_prefix) },
    Rule { pattern: r"(?-u)\b(xox[abprse]-|xapp-)[A-Za-z0-9\-]{10,}", replace: Replace::Captures(keep_prefix) },
    Rule { pattern: r"(?-u)\b(AKIA|ASIA)[A-Z0-9]{16}\b", replace: Replace::Captures(keep_prefix) },
    Rule { pattern: r"(?-u)\b(glpat-|glrt-|gldt-|glptt-)[A-Za-z0-9_\-]{20,}", replace: Replace::Captures(keep_prefix) },
    Rule {
        pattern: r"(?-u)\b((?:sk|rk)_(?:live|test)_|whsec_)[A-Za-z0-9]{10,}",
        replace: Replace::Captures(keep_prefix),
    },
    Rule { pattern: r"(?-u)\b(npm_)[A-Za-z0-9]{36}\b", replace: Replace::Captures(keep_prefix) },
    Rule { pattern: r"(?-u)\b(pypi-)AgE[A-Za-z0-9_\-]{50,}", replace: Replace::Captures(keep_prefix) },
    Rule { pattern: r"(?-u)\b(sk-(?:proj-|ant-)?)[A-Za-z0-9_\-]{20,}", replace: Replace::Captures(keep_prefix) },
    Rule { pattern: r"(?-u)\b(AIza)[0-9A-Za-z_\-]{35}", replace: Replace::Captures(keep_prefix) },
    // A Google OAuth access token; a SendGrid API key (`SG.` id `.` secret).
    Rule { pattern: r"(?-u)\b(ya29\.)[0-9A-Za-z_\-]{20,}", replace: Replace::Captures(keep_prefix) },
    Rule {
        pattern: r"(?-u)\b(SG\.)[0-9A-Za-z_\-]{16,32}\.[0-9A-Za-z_\-]{16,64}",
        replace: Replace::Captures(keep_prefix),
    },
    Rule {
        pattern: r"(?-u)\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*()",
        replace: Replace::Captures(keep_prefix),
    },
    Rule {
        pattern: r"(?-u)(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_\-]+",
        replace: Replace::Captures(keep_prefix),
    },
    Rule {
        pattern: r"(?-u)(discord(?:app)?\.com/api/webhooks/)[0-9]+/[A-Za-z0-9_\-]+",
        replace: Replace::Captures(keep_prefix),
    },
];

/// The rules compiled. Each is searched on its own: every pattern starts with a literal (or a
/// short alternation of them) that the regex engine finds with a vectorised search, which
/// measured faster than one pass of a `RegexSet` of them all (scripts/bench-redact.sh).
static COMPILED: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    // The patterns are constants compiled by every test: failing to compile is a bug.
    RULES.iter().map(|r| Regex::new(r.pattern).expect("redaction pattern compiles")).collect()
});

/// The values of secret-named variables this process knows (its own environment, which every
/// target inherits, and the secret-named values a hunt gives its cells), found anywhere in
/// text: a test that prints `$MY_API_TOKEN` has no shape to recognise it by. Values too short
/// or too plain to be told from ordinary output (`1`, `true`, `disabled`, `20240105`) are left
/// out: see [`SecretValues::worth_matching`].
static SECRET_VALUES: std::sync::RwLock<Option<std::sync::Arc<SecretValues>>> = std::sync::RwLock::new(None);

/// Literal secret values, matched by one automaton (the regex engine's multi-literal search).
#[derive(Debug)]
pub struct SecretValues {
    values: Vec<String>,
    regex: Option<Regex>,
}

impl SecretValues {
    /// The matcher of `values`, those [`Self::worth_matching`] only.
    pub fn new<I: IntoIterator<Item = String>>(values: I) -> Self {
        let mut values: Vec<String> = values.into_iter().filter(|v| Self::worth_matching(v)).collect();
        // Longest first, so that a value holding another is redacted whole.
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        let regex = (!values.is_empty()).then(|| {
            let alternation: Vec<String> = values.iter().map(|v| regex::escape(v)).collect();
            // Escaped literals always compile.
            Regex::new(&format!("(?-u){}", alternation.join("|"))).expect("literal alternation compiles")
        });
        Self { values, regex }
    }

    /// Whether a value can be looked for in output without taking ordinary words and numbers
    /// for it: at least 8 characters mixing two kinds (lower and upper case letters, digits,
    /// the rest), or at least 16 of any kind (a passphrase of plain words). `hunter2` and
    /// `disabled` are left to the rules by shape and by key.
    pub fn worth_matching(value: &str) -> bool {
        let classes = [
            value.bytes().any(|b| b.is_ascii_lowercase()),
            value.bytes().any(|b| b.is_ascii_uppercase()),
            value.bytes().any(|b| b.is_ascii_digit()),
            value.bytes().any(|b| !b.is_ascii_alphanumeric()),
        ];
        let kinds = classes.iter().filter(|c| **c).count();
        !value.contains('\n') && ((value.len() >= 8 && kinds >= 2) || value.len() >= 16)
    }

    /// How many values are looked for.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `input` with every value replaced by the marker (the common case, none, not copied).
    pub fn redact<'a>(&self, input: &'a [u8]) -> Cow<'a, [u8]> {
        match &self.regex {
            Some(regex) => regex.replace_all(input, REDACTED.as_bytes()),
            None => Cow::Borrowed(input),
        }
    }
}

/// Adds `values` (of secret-named variables) to those looked for in everything redacted from
/// now on; the ones too plain to match are left out.
pub fn add_secret_values<I: IntoIterator<Item = String>>(values: I) {
    let mut guard = SECRET_VALUES.write().unwrap_or_else(|e| e.into_inner());
    let mut all: Vec<String> = guard.as_ref().map(|s| s.values.clone()).unwrap_or_default();
    let before = all.len();
    all.extend(values.into_iter().filter(|v| SecretValues::worth_matching(v) && !all.contains(v)).collect::<Vec<_>>());
    if all.len() != before || guard.is_none() {
        *guard = Some(std::sync::Arc::new(SecretValues::new(all)));
    }
}

/// The values of this process's environment whose variable's name is secret
/// ([`is_secret_name`]): what every target inherits.
pub fn secret_values_of_environment() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| is_secret_name(k))
        .map(|(_, v)| v)
        .collect()
}

/// The secret values looked for now, if any.
fn secret_values() -> Option<std::sync::Arc<SecretValues>> {
    SECRET_VALUES.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// A test id with the secrets in it redacted and its shape kept: a pytest parameter part keeps
/// its brackets (`test_p[token=<redacted>]`), each `/`-separated level (a path, a Go subtest) is
/// redacted on its own, so a secret's redaction never runs into what follows it.
pub fn test_id(id: &str) -> Cow<'_, str> {
    let levels = |s: &str| -> String { s.split('/').map(|level| text(level)).collect::<Vec<_>>().join("/") };
    let (head, params) = match id.find('[') {
        Some(open) if open > 0 && id.ends_with(']') => (&id[..open], Some(&id[open + 1..id.len() - 1])),
        _ => (id, None),
    };
    let written = match params {
        Some(inner) => format!("{}[{}]", levels(head), text(inner)),
        None => levels(head),
    };
    if written == id {
        Cow::Borrowed(id)
    } else {
        Cow::Owned(written)
    }
}

/// `bytes` with every secret value found in it redacted (see the module's rules).
pub fn bytes(input: &[u8]) -> Cow<'_, [u8]> {
    let mut out = Cow::Borrowed(input);
    if let Some(values) = secret_values() {
        if let Cow::Owned(replaced) = values.redact(input) {
            out = Cow::Owned(replaced);
        }
    }
    for (rule, regex) in RULES.iter().zip(COMPILED.iter()) {
        if !regex.is_match(&out) {
            continue;
        }
        let replaced = match rule.replace {
            Replace::Captures(f) => regex.replace_all(&out, |c: &Captures<'_>| f(c, &out)).into_owned(),
            Replace::Span(f) => {
                let mut new = Vec::new();
                let mut last = 0;
                for m in regex.find_iter(&out) {
                    if let Some(replacement) = f(m.as_bytes(), m.start(), &out) {
                        new.extend_from_slice(&out[last..m.start()]);
                        new.extend_from_slice(&replacement);
                        last = m.end();
                    }
                }
                if last == 0 {
                    continue;
                }
                new.extend_from_slice(&out[last..]);
                new
            }
        };
        // A candidate left as it was (`pass=3`) does not make a copy of the text.
        if *replaced != *out {
            out = Cow::Owned(replaced);
        }
    }
    out
}

/// `input` with every secret value found in it redacted.
pub fn text(input: &str) -> Cow<'_, str> {
    match bytes(input.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(input),
        // Matches start and end at ASCII bytes, so the result is UTF-8; lossy is the safe
        // fallback all the same.
        Cow::Owned(b) => {
            Cow::Owned(String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
        }
    }
}

/// Redacts a string in place.
pub fn in_place(s: &mut String) {
    if let Cow::Owned(new) = text(s) {
        *s = new;
    }
}

/// Whether an argument is an option whose value is the next argument and a secret
/// (`--password`, `--token`, `-api-key`; not `--password=x`, which [`text`] handles).
fn is_secret_option(arg: &str) -> bool {
    let Some(name) = arg.strip_prefix('-') else { return false };
    let name = name.trim_start_matches('-');
    !name.is_empty() && !name.contains('=') && !name.eq_ignore_ascii_case("key") && is_secret_name(name)
}

/// An argv with its secrets redacted: those inside each argument, and the argument after an
/// option such as `--password` or `--token`.
pub fn argv(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    let mut user_next = false;
    for arg in args {
        if std::mem::take(&mut hide_next) && !arg.starts_with('-') {
            out.push(REDACTED.to_owned());
            continue;
        }
        // `curl -u user:X` given as two arguments: the part after the first colon.
        if std::mem::take(&mut user_next) && !arg.starts_with('-') {
            if let Some((user, password)) = arg.split_once(':') {
                if !password.is_empty() && !password.bytes().all(|b| b.is_ascii_digit()) {
                    out.push(format!("{user}:{REDACTED}"));
                    continue;
                }
            }
        }
        user_next = matches!(arg.as_str(), "-u" | "-U" | "--user" | "--proxy-user");
        hide_next = is_secret_option(arg);
        out.push(text(arg).into_owned());
    }
    out
}

/// Redacts every string of a JSON document in place. Besides the secrets inside each string,
/// values are redacted whole where a name says they are secret: the `value`/`values` of an
/// object whose `name` is secret (a matrix setting or dimension: `{"name": "API_TOKEN",
/// "value": "x"}`), and the entries of an `env` or `hints` object whose key is secret.
pub fn json(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => in_place(s),
        Value::Array(items) => items.iter_mut().for_each(json),
        Value::Object(map) => {
            let secret = map.get("name").and_then(Value::as_str).is_some_and(is_secret_name);
            for (key, item) in map.iter_mut() {
                if secret && (key == "value" || key == "values") {
                    hide_strings(item);
                } else if key == "env" || key == "hints" {
                    match item {
                        Value::Object(vars) => {
                            for (name, v) in vars.iter_mut() {
                                if is_secret_name(name) {
                                    hide_strings(v);
                                } else {
                                    json(v);
                                }
                            }
                        }
                        other => json(other),
                    }
                } else {
                    json(item);
                }
            }
        }
        _ => {}
    }
}

/// Replaces every string under `value` by the marker.
fn hide_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) => REDACTED.clone_into(s),
        serde_json::Value::Array(items) => items.iter_mut().for_each(hide_strings),
        serde_json::Value::Object(map) => map.values_mut().for_each(hide_strings),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
