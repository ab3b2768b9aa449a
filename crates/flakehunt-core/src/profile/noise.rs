//! Busy competitor threads for an attempt's lifetime. Main type: [`Noise`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::exec::Cancel;

/// Threads that spin on the given CPUs until stopped, each measuring the CPU time it got.
#[derive(Debug)]
pub struct Noise {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<f64>>,
}

impl Noise {
    /// Starts `count` threads, the i-th pinned to `cpus[i % len]` (unpinned when `cpus` is empty).
    /// A stop requested from `cancel` (Ctrl-C, SIGTERM) stops starting them: the busy threads
    /// already started compete with flakehunt's own, and starting more would only delay the stop.
    pub fn start(count: u32, cpus: &[usize], cancel: &Cancel) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count as usize)
            .take_while(|_| !cancel.is_stopping())
            .filter_map(|i| {
                let stop = Arc::clone(&stop);
                let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
                std::thread::Builder::new()
                    .name("flakehunt-noise".into())
                    .spawn(move || {
                        if let Some(cpu) = cpu {
                            let mut set = rustix::thread::CpuSet::new();
                            set.set(cpu);
                            let _ = rustix::thread::sched_setaffinity(None, &set);
                        }
                        let mut x = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            for _ in 0..1000 {
                                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                            }
                        }
                        thread_cpu_seconds()
                    })
                    .ok()
            })
            .collect();
        Self { stop, threads }
    }

    /// Stops the threads; returns the CPU seconds they consumed.
    pub fn finish(mut self) -> f64 {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.drain(..).filter_map(|t| t.join().ok()).sum()
    }
}

impl Drop for Noise {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn thread_cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requested_stop_starts_no_more_threads() {
        let cancel = Cancel::new().unwrap();
        let noise = Noise::start(2, &[], &cancel);
        assert_eq!(noise.threads.len(), 2);
        noise.finish();
        cancel.request();
        let noise = Noise::start(1_000, &[], &cancel);
        assert!(noise.threads.is_empty());
        assert_eq!(noise.finish(), 0.0);
    }
}
