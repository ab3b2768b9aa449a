//! Tests of redaction: every family of names and values, each with the look-alikes that must
//! survive.

use super::*;

fn red(s: &str) -> String {
    text(s).into_owned()
}

/// Asserts that `secret` is gone from the redaction of `input`, which holds the marker.
#[track_caller]
fn hides(input: &str, secret: &str) {
    let out = red(input);
    assert!(!out.contains(secret), "{secret:?} left in {out:?} (from {input:?})");
    assert!(out.contains(REDACTED), "no marker in {out:?}");
    // What is written may be redacted again (a line of the record shown on the terminal).
    assert_eq!(red(&out), out, "redacting {out:?} again changes it (from {input:?})");
}

#[track_caller]
fn keeps(input: &str) {
    assert_eq!(red(input), input);
}

#[test]
fn secret_names_of_every_family() {
    for name in [
        "MYSQL_PWD",
        "PGPASS",
        "PGPASSWORD",
        "DOCKER_PASS",
        "DB_PASSWORD",
        "MYSQL_PASSWD",
        "GPG_PASSPHRASE",
        "AWS_SECRET_ACCESS_KEY",
        "CLIENT_SECRET",
        "GITHUB_TOKEN",
        "github_token",
        "API_KEY",
        "ApiKey",
        "SSH_KEY",
        "GH_PAT",
        "AZURE_DEVOPS_EXT_PAT",
        "SENTRY_DSN",
        "SLACK_WEBHOOK",
        "DISCORD_WEBHOOK_URL",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "HTTP_AUTHORIZATION",
        "NPM_CONFIG__AUTH",
        "COOKIE_JAR",
        "SESSION_ID",
        "JWT",
        "CI_JOB_JWT",
        "SSH_PRIVATE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SESSION_TOKEN",
        "AWS_WHATEVER",
    ] {
        assert!(is_secret_name(name), "{name}");
        assert_eq!(env_value(name, "hunter2"), REDACTED, "{name}");
        assert_eq!(env_value(name, ""), REDACTED, "{name}");
    }
}

#[test]
fn harmless_names_keep_their_values() {
    for name in [
        "PATH",
        "MANPATH",
        "LD_LIBRARY_PATH",
        "PYTHONPATH",
        "CLASSPATH",
        "PATTERN",
        "DISPATCH_MODE",
        "PWD",
        "OLDPWD",
        "KEYBOARD_LAYOUT",
        "XKB_DEFAULT_LAYOUT",
        "XKB_KEYMAP",
        "GIT_AUTHOR_NAME",
        "TOKENIZERS_PARALLELISM",
        "TESTS_PASSED",
        "BYPASS_CACHE",
        "XDG_SESSION_TYPE",
        "AWS_REGION",
        "HOME",
        "LANG",
        "CARGO_TERM_COLOR",
        "RUST_BACKTRACE",
    ] {
        assert!(!is_secret_name(name), "{name}");
        assert_eq!(env_value(name, "/usr/bin:/bin"), "/usr/bin:/bin", "{name}");
    }
    // PWD is not secret by name, but a secret in its value is still found.
    assert_eq!(env_value("PWD", "/home/me/ghp_0123456789abcdefghijABCDEFGHIJ0123456"), "/home/me/ghp_<redacted>");
}

#[test]
fn private_key_blocks() {
    let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAMwAAAAtzc2gtZWQyNTUxOQAAACDd\n-----END OPENSSH PRIVATE KEY-----\n";
    assert_eq!(
        red(&format!("key:\n{pem}done")),
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----<redacted>-----END OPENSSH PRIVATE KEY-----\ndone"
    );
    hides("x -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\\nabc", "MIIEowIBAAKCAQEA7");
    hides("-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----", "lQOYBF");
    // A tail that starts inside the block.
    hides(
        "AAAAMwAAAAtzc2gtZWQyNTUxOQAAACDd\nQUJDREVGR0hJSktMTU5PUFFSU1RVVldY\n-----END PRIVATE KEY-----\n",
        "QUJDREVG",
    );
    // Certificates and public keys are not secret.
    keeps("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----");
    keeps("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKC\n-----END PUBLIC KEY-----");
}

#[test]
fn url_passwords() {
    let cases = [
        ("postgres://app:s3cret@db:5432/app", "postgres://app:<redacted>@db:5432/app"),
        ("http://user:pa:ss@proxy.local:3128", "http://user:<redacted>@proxy.local:3128"),
        ("https://u:p@ss@host/x", "https://u:<redacted>@host/x"),
        ("https://u:pa/ss/w0rd@host/x", "https://u:<redacted>@host/x"),
        ("redis://:hunter2@cache:6379/0", "redis://:<redacted>@cache:6379/0"),
        ("a=http://x:1a@h1/ b=ftp://y:2b@h2/", "a=http://x:<redacted>@h1/ b=ftp://y:<redacted>@h2/"),
        ("https://x-access-token:abc123@github.com/o/r", "https://x-access-token:<redacted>@github.com/o/r"),
        // A key as the user name (Sentry DSN).
        ("https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/2", "https://<redacted>@o1.ingest.sentry.io/2"),
        // Without a scheme.
        ("DB=app:Sup3r/secret@db.internal:5432", "DB=app:<redacted>@db.internal:5432"),
        ("connect app:hunter2@db", "connect app:<redacted>@db"),
    ];
    for (input, expected) in cases {
        assert_eq!(red(input), expected, "{input}");
    }
    for harmless in [
        "https://user@host/path",
        "https://host:8080/path",
        "https://host:8080/users/@me",
        "https://example.com/a/b?q=1&page=2#top",
        "git@github.com:org/repo.git",
        "mailto:someone@example.com",
        "nginx:1.25@sha256:0123abcd",
        "plain value",
        "",
    ] {
        keeps(harmless);
    }
}

#[test]
fn key_value_pairs() {
    let cases = [
        ("https://h/cb?password=hunter2&user=bob", "https://h/cb?password=<redacted>&user=bob"),
        ("https://h/x?access_token=abc.def&x=1", "https://h/x?access_token=<redacted>&x=1"),
        ("Server=db;Uid=sa;Password=Xy!9;Database=app", "Server=db;Uid=sa;Password=<redacted>;Database=app"),
        ("Driver={x};Pwd=hunter2;", "Driver={x};Pwd=<redacted>;"),
        (
            "passwd=a secret=b token=c api_key=d",
            "passwd=<redacted> secret=<redacted> token=<redacted> api_key=<redacted>",
        ),
        ("--password=hunter2 --verbose", "--password=<redacted> --verbose"),
        ("DOCKER_PASS=hunter2 ./deploy", "DOCKER_PASS=<redacted> ./deploy"),
        ("export GH_PAT=abc123", "export GH_PAT=<redacted>"),
        ("{\"password\": \"hunter2\", \"user\": \"bob\"}", "{\"password\": \"<redacted>\", \"user\": \"bob\"}"),
        ("Config { api_key: \"k-123\" }", "Config { api_key: \"<redacted>\" }"),
        ("Authorization: Bearer abc.def.ghi", "Authorization: Bearer <redacted>"),
        ("curl -H 'X: y' -u x -d pass=hunter2", "curl -H 'X: y' -u x -d pass=<redacted>"),
        ("AccountName=a;AccountKey=bXlrZXk=;", "AccountName=a;AccountKey=<redacted>;"),
        ("?sv=1&sig=abcDEF%2B", "?sv=1&sig=<redacted>"),
    ];
    for (input, expected) in cases {
        assert_eq!(red(input), expected, "{input}");
        assert_eq!(red(expected), expected, "redacted again");
    }
    for harmless in [
        "the password is wrong, try again",
        "please enter your password.",
        "PATH=/usr/bin:/bin",
        "PWD=/home/me/project",
        "OLDPWD=~/src",
        "KEYBOARD_LAYOUT=us",
        "pass=3 fail=0",
        "key=3",
        "KeyError: 'missing'",
        "thread 'auth::tests::login' panicked at src/auth.rs:10:5",
        "listening on my-auth:443",
        "passed=10 failed=0",
        "password=",
    ] {
        keeps(harmless);
    }
}

#[test]
fn secret_arguments() {
    assert_eq!(red("mysql --password hunter2 -h db"), "mysql --password <redacted> -h db");
    assert_eq!(red("tool --api-key k123 --token t456"), "tool --api-key <redacted> --token <redacted>");
    // The next option is not a value; a file holding the password is not the password.
    keeps("tool --token --verbose");
    keeps("tool --password-file /run/secret");
    let args: Vec<String> = ["deploy", "--password", "hunter2", "--token=t456", "-v", "postgres://u:p4ss@h/db"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    assert_eq!(
        argv(&args),
        ["deploy", "--password", REDACTED, "--token=<redacted>", "-v", "postgres://u:<redacted>@h/db"]
    );
    // Quoted values, and options inside a test id's brackets or an argument list: the id keeps
    // its `]`, the quotes stay.
    assert_eq!(red("tool --secret 'hunter 4' -v"), "tool --secret '<redacted>' -v");
    assert_eq!(red(r#"tool --token "t456""#), r#"tool --token "<redacted>""#);
    assert_eq!(
        red("FAILED tests/t.py::test_cli[--token hunter2] - assert"),
        "FAILED tests/t.py::test_cli[--token <redacted>] - assert"
    );
    assert_eq!(red("main(--password hunter2)"), "main(--password <redacted>)");
    assert_eq!(red("run [--token hunter2]"), "run [--token <redacted>]");
    keeps("tool --secret '' -v");
    keeps("test_cli[--token-file path]");
    let id: Vec<String> = ["pytest".into(), "tests/t.py::test_cli[--token hunter2]".into()].to_vec();
    assert_eq!(argv(&id), ["pytest", "tests/t.py::test_cli[--token <redacted>]"]);
    let harmless: Vec<String> = ["ls", "--key", "-l", "path/to/key.pem"].iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(argv(&harmless), harmless);
}

#[test]
fn token_shapes() {
    for (input, secret) in [
        ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "0123456789abcdef"),
        ("gho_0123456789abcdefghijABCDEFGHIJ012345", "0123456789abcdef"),
        ("ghu_0123456789abcdefghijABCDEFGHIJ012345", "0123456789abcdef"),
        ("ghs_0123456789abcdefghijABCDEFGHIJ012345", "0123456789abcdef"),
        ("ghr_0123456789abcdefghijABCDEFGHIJ012345", "0123456789abcdef"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "11ABCDEFG0123456789"),
        ("xoxb-1234567890-abcdefghij", "1234567890-abcdefghij"),
        ("xoxp-1234567890-abcdefghij", "1234567890-abcdefghij"),
        ("xoxa-2-1234567890abcdef", "1234567890abcdef"),
        ("id AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
        ("ASIAY34FZKBOKMUTVV7A", "Y34FZKBOKMUTVV7A"),
        ("glpat-abcdefghij0123456789", "abcdefghij0123456789"),
        ("sk_live_0123456789abcdefghij", "0123456789abcdefghij"),
        ("sk_test_0123456789abcdefghij", "0123456789abcdefghij"),
        ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz0123456789"),
        ("AIzaSyA-0123456789abcdefghijklmnopqrstu", "SyA-0123456789abcdefghijklmnop"),
        (
            "t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "dozjgNryP4J3jVmNHl0w5N",
        ),
        ("POST https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXX", "T0000/B0000/XXXXXXXXXXXX"),
        ("https://discord.com/api/webhooks/123456/abcDEF-ghi", "abcDEF-ghi"),
    ] {
        hides(input, secret);
    }
    // Look-alikes that are not secrets.
    for harmless in [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "id 123e4567-e89b-12d3-a456-426614174000",
        "ghp_short",
        "task-0123456789abcdefghijklmnop",
        "AKIA is a prefix",
        "eyJhbGciOiJIUzI1NiJ9 alone",
        "https://hooks.slack.com/",
        "ünïcödé stays ünïcödé",
    ] {
        keeps(harmless);
    }
}

#[test]
fn non_utf8_bytes_are_redacted_too() {
    let input = b"\xff\xfe token=hunter2 \xff";
    assert_eq!(&*bytes(input), b"\xff\xfe token=<redacted> \xff");
}

#[test]
fn json_documents() {
    let mut doc = serde_json::json!({"a": ["x --password hunter2", 3], "b": {"c": "token=t1"}});
    json(&mut doc);
    assert_eq!(doc, serde_json::json!({"a": ["x --password <redacted>", 3], "b": {"c": "token=<redacted>"}}));
    let mut doc = serde_json::json!({
        "overlay": [{"kind": "env", "name": "API_TOKEN", "value": "t1"}, {"kind": "env", "name": "LC_ALL", "value": "C"}],
        "dimensions": [{"name": "DB_PASSWORD", "kind": "env", "values": ["a", "b"]}],
        "env": {"GH_PAT": "p", "HOME": "/home/u", "URL": "https://u:pw@h/"},
        "hints": {"SESSION": "s"},
        "keep_logs": "all"
    });
    json(&mut doc);
    assert_eq!(
        doc,
        serde_json::json!({
            "overlay": [{"kind": "env", "name": "API_TOKEN", "value": REDACTED}, {"kind": "env", "name": "LC_ALL", "value": "C"}],
            "dimensions": [{"name": "DB_PASSWORD", "kind": "env", "values": [REDACTED, REDACTED]}],
            "env": {"GH_PAT": REDACTED, "HOME": "/home/u", "URL": "https://u:<redacted>@h/"},
            "hints": {"SESSION": REDACTED},
            "keep_logs": "all"
        })
    );
}

#[test]
fn redaction_is_idempotent() {
    let input = "postgres://u:p@h?password=x DOCKER_PASS=y ghp_0123456789abcdefghijABCDEFGHIJ012345 --token z";
    let once = red(input);
    assert_eq!(red(&once), once);
}

#[test]
fn families_found_by_adversarial_testing() {
    for name in ["DB_PW", "ROOTPW", "REGISTRY_CREDS", "AWS_CRED", "MY_CRED"] {
        assert!(is_secret_name(name), "{name}");
    }
    // CREDIT is not a CRED word.
    for name in ["PWD", "PATH", "CREDIT_CARD_TYPE"] {
        assert!(!is_secret_name(name), "{name}");
    }
    hides("DB_PW=dbpw-1a1a REGISTRY_CREDS=creds-2b2b ./run", "dbpw-1a1a");
    hides("REGISTRY_CREDS=creds-2b2b ./run", "creds-2b2b");
    hides("ya29.a0AfH6SMBsecretgoogleoauthtoken0123", "SMBsecretgoogleoauthtoken0123");
    hides("SG.abcdefghijklmnopqrstuv.sendgridsecret0123456789abcdefghijklmnopq", "sendgridsecret0123456789");
    hides("machine api.github.com login bob password netrcpw-1a2b", "netrcpw-1a2b");
    hides("machine h\n  login bob\n  password netrcpw-3c4d\n", "netrcpw-3c4d");
    hides("curl -u admin:curlpw-5e6f https://h/", "curlpw-5e6f");
    hides("curl --user=admin:curlpw-7a8b https://h/", "curlpw-7a8b");
    let args: Vec<String> = ["curl", "-u", "admin:curlpw-9c0d", "https://h/"].iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(argv(&args), ["curl", "-u", "admin:<redacted>", "https://h/"]);
    // What must stay readable: counts and limits, uids, prose, test names.
    for harmless in [
        "max_tokens=100 num_keys=5 session_timeout=30",
        "docker run -u 1000:1000 img",
        "password is wrong",
        "Password required for bob",
        "test_token_refresh PASSED",
        "sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    ] {
        keeps(harmless);
    }
    let uid: Vec<String> = ["docker", "-u", "1000:1000"].iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(argv(&uid), uid);
    // A numeric password stays hidden: only counts are exempt.
    hides("password=123456", "123456");
}

#[test]
fn test_ids_keep_their_brackets_and_levels() {
    assert_eq!(
        test_id("tests/t.py::test_p[token=ghp_0123456789abcdefghij0123]"),
        "tests/t.py::test_p[token=<redacted>]"
    );
    assert_eq!(
        test_id("tests/t.py::test_db[postgres://app:s3cret@db/app]"),
        "tests/t.py::test_db[postgres://app:<redacted>@db/app]"
    );
    assert_eq!(test_id("tests/t.py::test_p[ghp_0123456789abcdefghij0123-1]"), "tests/t.py::test_p[ghp_<redacted>-1]");
    assert_eq!(test_id("TestLogin/password=hunter2/retry"), "TestLogin/password=<redacted>/retry");
    // Redacting a written id again changes nothing.
    for id in ["tests/t.py::test_p[token=<redacted>]", "TestLogin/password=<redacted>/retry"] {
        assert_eq!(test_id(id), id);
        assert_eq!(text(id), id);
    }
    // Ids with no secret are borrowed as they are, whatever they hold.
    for id in ["tests/test_tokens.py::test_auth_key", "tests/t.py::test_x[1-2]", "auth::tests::login", "TestA/sub"] {
        assert!(matches!(test_id(id), Cow::Borrowed(_)), "{id}");
    }
}

#[test]
fn a_secret_inside_brackets_leaves_the_closing_bracket() {
    // pytest's summary line and `PYTEST_CURRENT_TEST` quote a test id whose parameter holds a
    // secret: the id keeps its `]`, and what follows it stays where it was.
    assert_eq!(
        red("FAILED tests/t.py::test_p[token=ghp_0123456789abcdefghij0123] - AssertionError"),
        "FAILED tests/t.py::test_p[token=<redacted>] - AssertionError"
    );
    assert_eq!(
        red("'tests/t.py::test_p[password=hunter2] (call)'"),
        "'tests/t.py::test_p[password=<redacted>] (call)'"
    );
    assert_eq!(red("connect(password=hunter2)"), "connect(password=<redacted>)");
    assert_eq!(red("{api_key=abc123xyz}"), "{api_key=<redacted>}");
    assert_eq!(red("Authorization: Bearer abcdefgh12345678]"), "Authorization: Bearer <redacted>]");
    assert_eq!(red("[machine h login u password netrc-1a2b]"), "[machine h login u password <redacted>]");
    // A bracket the value opened is the value's: it goes with it.
    hides("password=a[1]", "a[1]");
    hides("password=f(x)", "f(x)");
    hides("FAILED t.py::test_p[token=ghp_0123456789abcdefghij0123] - x", "ghp_0123456789abcdefghij0123");
}

#[test]
fn the_values_of_secret_named_variables_are_found_as_they_are() {
    let values = SecretValues::new(
        ["EnvValue0nly4Name", "correct horse battery staple", "1", "true", "disabled", "hunter2", "20240105"]
            .map(String::from),
    );
    // Too short or too plain to tell from output: ordinary words, numbers, flags.
    assert_eq!(values.len(), 2);
    let out = values.redact(b"connect EnvValue0nly4Name; pass correct horse battery staple; auth disabled 1 true");
    assert_eq!(&*out, b"connect <redacted>; pass <redacted>; auth disabled 1 true".as_slice());
    assert!(matches!(values.redact(b"nothing here"), Cow::Borrowed(_)));
    // A value holding another goes whole.
    let nested = SecretValues::new(["Abcdefgh1", "Abcdefgh1-longer"].map(String::from));
    assert_eq!(&*nested.redact(b"x Abcdefgh1-longer y"), b"x <redacted> y".as_slice());
    assert!(SecretValues::new(Vec::new()).is_empty());
}
