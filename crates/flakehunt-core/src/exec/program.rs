//! Whether a target can be started at all. An attempt that could not start never ran, so it is
//! no evidence about the test: a hunt checks what it cheaply can before its first attempt
//! ([`check_program`]), and stops at the first spawn error that will repeat
//! ([`error_repeats`]) with one line saying what to change ([`spawn_failure`]).

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why a program cannot be started, found before the first attempt.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    /// A path that does not exist.
    #[error("cannot start '{0}': no such file")]
    Missing(String),
    /// A directory, a device or a file without execute permission.
    #[error("cannot start '{0}': not executable (chmod +x it, or run it through its interpreter)")]
    NotExecutable(String),
    /// A file the kernel has no way to execute: neither `#!` nor a binary format it knows.
    #[error(
        "cannot start '{0}': it is neither a binary nor a script with a #! line (add a shebang line such as #!/bin/sh, or run it through its interpreter: -- sh {0})"
    )]
    NoShebang(String),
    /// A bare name that no `PATH` directory holds.
    #[error("cannot start '{0}': not found in PATH (install it, or give its path)")]
    NotInPath(String),
}

impl crate::error_class::Classify for ProgramError {
    fn class(&self) -> crate::error_class::ErrorClass {
        match self {
            Self::Missing(_) | Self::NotExecutable(_) | Self::NoShebang(_) | Self::NotInPath(_) => {
                crate::error_class::ErrorClass::Usage
            }
        }
    }
}

/// Checks that `program` (a path, or a name looked up in `PATH`) can be started from `cwd`
/// (the attempt's working directory; the current one when `None`).
pub fn check_program(program: &str, cwd: Option<&Path>) -> Result<(), ProgramError> {
    let on_disk = |p: &Path| -> PathBuf {
        match cwd {
            Some(base) if p.is_relative() => base.join(p),
            _ => p.to_owned(),
        }
    };
    let executable = |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = on_disk(Path::new(program));
        if !p.exists() {
            return Err(ProgramError::Missing(program.to_owned()));
        }
        if !executable(&p) {
            return Err(ProgramError::NotExecutable(program.to_owned()));
        }
        if !known_format(&p) {
            return Err(ProgramError::NoShebang(program.to_owned()));
        }
        return Ok(());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|dir| executable(&on_disk(&dir.join(program)))) {
        return Ok(());
    }
    Err(ProgramError::NotInPath(program.to_owned()))
}

/// Whether the kernel can execute the file as far as its first bytes tell: a `#!` script, an
/// ELF binary, or any file at all when `binfmt_misc` has handlers registered (they may take
/// formats of their own). Unreadable files are given the benefit of the doubt: exec decides.
fn known_format(path: &Path) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else { return true };
    let mut head = [0u8; 4];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(_) => return true,
        }
    }
    head[..n].starts_with(b"#!") || head[..n] == *b"\x7fELF" || binfmt_misc_handlers()
}

/// Whether `program` (relative to `dir`) starts as an ELF file does.
fn is_elf(program: &str, dir: Option<&Path>) -> bool {
    use std::io::Read;
    let path = match dir {
        Some(d) if Path::new(program).is_relative() => d.join(program),
        _ => PathBuf::from(program),
    };
    let mut head = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && head == *b"\x7fELF"
}

/// Whether `binfmt_misc` has any handler registered (besides its control files).
fn binfmt_misc_handlers() -> bool {
    std::fs::read_dir("/proc/sys/fs/binfmt_misc")
        .is_ok_and(|entries| entries.flatten().any(|e| !matches!(e.file_name().to_str(), Some("register" | "status"))))
}

/// Whether a spawn error will happen again on every attempt, because it comes from the program
/// or its arguments rather than from a passing shortage (memory, processes, file descriptors).
pub fn error_repeats(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::ENOEXEC
                | libc::ENOENT
                | libc::EACCES
                | libc::ENOTDIR
                | libc::E2BIG
                | libc::ELOOP
                | libc::ENAMETOOLONG
                | libc::EISDIR
                | libc::ELIBBAD
        )
    ) || matches!(
        e.kind(),
        // InvalidInput: a NUL byte in an argument or a variable, which no attempt can pass.
        io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied | io::ErrorKind::InvalidInput
    )
}

/// The one line for a target that cannot be started: why, and what to change. `dir` is the
/// attempt's working directory (a test runner's package directory), when it has one. The kernel
/// says "no such file" both for a missing program and for a script whose `#!` interpreter is
/// missing, and for a missing working directory; these are told apart here.
pub fn spawn_failure(program: &str, source: &io::Error, dir: Option<&Path>) -> String {
    let missing_dir = dir.filter(|d| !d.is_dir());
    let why = match source.raw_os_error() {
        Some(libc::ENOENT) | None if source.kind() == io::ErrorKind::NotFound => {
            if let Some(d) = missing_dir {
                return format!(
                    "cannot start '{program}' in {}: no such directory here (resume from the directory the hunt started in)",
                    d.display()
                );
            }
            if check_program(program, dir).is_ok() {
                "its interpreter was not found (check its #! line)".to_owned()
            } else {
                "no such file (was it removed or renamed during the hunt? give its path again)".to_owned()
            }
        }
        Some(libc::ENOEXEC) if is_elf(program, dir) => {
            "an ELF file the kernel cannot execute (damaged, or built for another machine): rebuild it for this one"
                .to_owned()
        }
        Some(libc::ENOEXEC) => format!(
            "the kernel cannot execute it (exec format error): add a shebang line such as #!/bin/sh, or run it through its interpreter: -- sh {program}"
        ),
        Some(libc::EACCES) => "permission denied (chmod +x it, and check that its directories can be entered and its file system is not mounted noexec)".to_owned(),
        Some(libc::ENOTDIR) => "a part of its path is not a directory: give its real path".to_owned(),
        Some(libc::E2BIG) => "its arguments and environment are too long for the kernel: make them shorter".to_owned(),
        Some(libc::ELOOP) => "too many levels of symbolic links in its path: give its real path".to_owned(),
        Some(libc::ENAMETOOLONG) => "its path is too long: give a shorter one".to_owned(),
        Some(libc::EISDIR) => "it is a directory: give the program inside it".to_owned(),
        Some(libc::ELIBBAD) => "its ELF interpreter is damaged: rebuild or reinstall it".to_owned(),
        _ => source.to_string(),
    };
    format!("cannot start '{program}': {why}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(dir: &Path, name: &str, content: &[u8]) -> String {
        let p = dir.join(name);
        std::fs::write(&p, content).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    }

    #[test]
    fn a_script_without_a_shebang_is_refused_before_the_first_attempt() {
        let tmp = tempfile::tempdir().unwrap();
        let script = executable(tmp.path(), "t.sh", b"echo hi\n");
        let empty = executable(tmp.path(), "empty", b"");
        let good = executable(tmp.path(), "good.sh", b"#!/bin/sh\necho hi\n");
        if binfmt_misc_handlers() {
            // Such a machine may execute anything: only exec can tell.
            assert!(check_program(&script, None).is_ok());
            return;
        }
        for p in [&script, &empty] {
            let e = check_program(p, None).unwrap_err().to_string();
            assert!(e.contains("add a shebang line such as #!/bin/sh"), "{e}");
        }
        assert!(check_program(&good, None).is_ok());
        assert!(check_program("/bin/sh", None).is_ok());
        assert!(check_program("sh", None).is_ok());
        assert!(matches!(check_program("no-such-program-anywhere", None), Err(ProgramError::NotInPath(_))));
        // Relative to the attempt's working directory, not to flakehunt's.
        assert!(check_program("./good.sh", Some(tmp.path())).is_ok());
        assert!(matches!(check_program("./good.sh", None), Err(ProgramError::Missing(_))));
    }

    #[test]
    fn errors_of_the_program_repeat_and_shortages_do_not() {
        for errno in [libc::ENOEXEC, libc::ENOENT, libc::EACCES, libc::ENOTDIR, libc::E2BIG, libc::ELOOP] {
            assert!(error_repeats(&io::Error::from_raw_os_error(errno)), "{errno}");
        }
        assert!(error_repeats(&io::Error::new(io::ErrorKind::InvalidInput, "the variable A holds a NUL byte")));
        for errno in [libc::EAGAIN, libc::ENOMEM, libc::EMFILE, libc::ENFILE, libc::ETXTBSY, libc::EINTR] {
            assert!(!error_repeats(&io::Error::from_raw_os_error(errno)), "{errno}");
        }
    }

    #[test]
    fn each_repeating_error_says_what_to_change() {
        let m = spawn_failure("./t.sh", &io::Error::from_raw_os_error(libc::ENOEXEC), None);
        assert_eq!(
            m,
            "cannot start './t.sh': the kernel cannot execute it (exec format error): add a shebang line such as #!/bin/sh, or run it through its interpreter: -- sh ./t.sh"
        );
        let not_found = io::Error::from(io::ErrorKind::NotFound);
        let m = spawn_failure("/bin/sh", &not_found, Some(Path::new("no/such/pkg")));
        assert_eq!(
            m,
            "cannot start '/bin/sh' in no/such/pkg: no such directory here (resume from the directory the hunt started in)"
        );
        let m = spawn_failure("/bin/sh", &not_found, Some(Path::new("/")));
        assert!(m.contains("interpreter was not found"), "{m}");
        let m = spawn_failure("/gone/prog", &io::Error::from_raw_os_error(libc::ENOENT), None);
        assert!(m.contains("no such file (was it removed"), "{m}");
        let m = spawn_failure("p", &io::Error::from_raw_os_error(libc::E2BIG), None);
        assert!(m.ends_with("too long for the kernel: make them shorter"), "{m}");
    }
}
