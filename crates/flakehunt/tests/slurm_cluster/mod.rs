//! A single-node Slurm cluster for the tests that submit to a real Slurm: its own
//! `slurm.conf`, state, spool and ports in a temporary directory; the daemons are stopped by
//! their pids when it is dropped, also when the test fails. Needs `slurmctld`, `slurmd` and the
//! client commands (Debian: `slurm-wlm`); without them the test fails, it does not skip.

// Each test binary that includes this module uses only part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The path of a Slurm program (daemons live in sbin, which a user's PATH may lack).
pub fn slurm_program(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into(), "/usr/local/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("`{name}` is not installed: this test needs a real Slurm (Debian: apt-get install slurm-wlm)")
        })
}

fn output_of(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Two different ports nobody listens on now (the OS picks them). Both listeners are held
/// until both ports are known, so the OS cannot hand out the same port twice.
fn free_ports() -> (u16, u16) {
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    (a.local_addr().unwrap().port(), b.local_addr().unwrap().port())
}

/// The daemons, killed and reaped when dropped, whatever happened in between.
pub struct Cluster {
    dir: tempfile::TempDir,
    /// The cluster's `slurm.conf`: give it to the client commands as `SLURM_CONF`.
    pub conf: PathBuf,
    daemons: Vec<Child>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in &mut self.daemons {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Cluster {
    /// Starts the daemons and waits until the node is idle.
    pub fn start() -> Self {
        let ctld = slurm_program("slurmctld");
        let slurmd = slurm_program("slurmd");
        for client in ["sbatch", "squeue", "sinfo", "scontrol"] {
            slurm_program(client);
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_owned();
        for sub in ["state", "spool"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        let node = output_of("hostname", &["-s"]);
        let user = output_of("id", &["-un"]);
        let (ctld_port, d_port) = free_ports();
        let conf = d.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=flakehunt-test\n\
                 SlurmctldHost={node}(127.0.0.1)\n\
                 SlurmUser={user}\nSlurmdUser={user}\n\
                 AuthType=auth/none\nCredType=cred/none\nMpiDefault=none\n\
                 SlurmctldPort={ctld_port}\nSlurmdPort={d_port}\n\
                 StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
                 SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
                 SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
                 ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
                 SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n\
                 ReturnToService=2\nJobCompType=jobcomp/none\n\
                 AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n\
                 MailProg=/bin/true\n\
                 NodeName={node} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN\n\
                 PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP\n",
                d = d.display()
            ),
        )
        .unwrap();
        let mut cluster = Cluster { conf: conf.clone(), daemons: Vec::new(), dir };
        for (program, args) in [(&ctld, &["-D", "-i"][..]), (&slurmd, &["-D"][..])] {
            let log = std::fs::File::create(d.join(format!("{}.out", program.file_name().unwrap().to_string_lossy())))
                .unwrap();
            let child = Command::new(program)
                .args(args)
                .env("SLURM_CONF", &conf)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
            cluster.daemons.push(child);
        }
        cluster.wait_idle();
        cluster
    }

    /// Bounded polling until the node is idle; a generous deadline, never a fixed sleep.
    fn wait_idle(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let out = Command::new("sinfo").args(["-h", "-o", "%T"]).env("SLURM_CONF", &self.conf).output();
            if out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle") {
                return;
            }
            for child in &mut self.daemons {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!("a Slurm daemon exited ({status}) before the node came up:\n{}", self.logs());
                }
            }
            assert!(Instant::now() < deadline, "the Slurm node did not become idle within 120 s:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The daemons' logs, for a failing assertion.
    pub fn logs(&self) -> String {
        ["slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"]
            .iter()
            .map(|f| format!("--- {f}\n{}", std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default()))
            .collect()
    }
}
