//! The loop around [`step`]: wait for work, take it out of the sessions, step, push the
//! rates, keep the figures. Two drivers share it: the daemon's thread ([`start_cycles`]),
//! woken through a condition variable so that the runtime's workers never wait on a
//! cycle; and the timer ([`run_deadlines`]) that closes each cycle half an interval after
//! its boundary with what was reported.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::sessions::Sessions;
use super::step::{Work, step};
use super::{Global, policy_message};

impl Global {
    /// Moves the work the streams left into `work`; whether there was any. With none,
    /// the sessions are marked idle, so that the next event wakes the cycle's driver.
    fn take_work(sessions: &mut Sessions, work: &mut Work) -> bool {
        if sessions.events.is_empty() && sessions.due.is_none() {
            sessions.idle = true;
            return false;
        }
        std::mem::swap(&mut work.events, &mut sessions.events);
        work.due = sessions.due.take();
        work.unit = sessions.unit;
        true
    }

    /// The cycle thread: applies what the streams received, as it comes, and computes
    /// each cycle handed to it. Never returns.
    fn run_cycles(&self) {
        let mut work = Work::default();
        loop {
            let mut sessions = self.sessions();
            while !Self::take_work(&mut sessions, &mut work) {
                sessions = self.wake.wait(sessions).expect("sessions");
            }
            drop(sessions);
            self.cycle(&mut work);
        }
    }

    /// The cycle driven from a task instead of a thread: what a test runs on tokio's
    /// paused time, where a thread's work would race the clock. Never returns.
    #[cfg(test)]
    pub(super) async fn run_cycles_on_task(&self) {
        let mut work = Work::default();
        loop {
            // Made before the look, so that a wake in between is kept.
            let woken = self.woken.notified();
            let taken = Self::take_work(&mut self.sessions(), &mut work);
            if taken {
                self.cycle(&mut work);
            } else {
                woken.await;
            }
        }
    }

    /// One turn: [`step`] under the coordinator, then the rates out, then the figures.
    fn cycle(&self, work: &mut Work) {
        let mut c = self.coordinator.lock().expect("coordinator");
        let interval = c.config().interval;
        {
            let mut sessions = self.sessions();
            if sessions.unit != interval {
                sessions.renumber(interval);
            }
        }
        self.interval_ns
            .store(interval.as_nanos() as u64, Ordering::Relaxed);
        let Some((cycle, computed)) = step(&mut c, work) else {
            return;
        };
        let rates = match computed {
            Ok(rates) => rates,
            Err(e) => {
                tracing::error!("cycle {cycle}: {e}");
                return;
            }
        };
        // The rates were computed under this policy: a local not sent it yet is sent it
        // first, as pools it does not know would drop their rates.
        let version = c.policy_version();
        let policy = self
            .sessions()
            .owe_policy(version)
            .then(|| policy_message(&c));
        let held = (!rates.is_empty() && self.held.is_some()).then(|| c.cluster().held());
        drop(c);
        self.push(cycle, rates, version, policy);
        // Written after the push, which must not wait on a disk.
        if let (Some(file), Some(held)) = (&self.held, held) {
            file.save(&held);
        }
        self.keep_figures(cycle, interval);
    }

    /// Keeps how long cycle `cycle` took from its boundary, and the history and metrics
    /// of what it computed.
    fn keep_figures(&self, cycle: u64, interval: Duration) {
        let boundary_ns = u128::from(cycle) * interval.as_nanos();
        let since_ns = self
            .clock
            .since_epoch()
            .as_nanos()
            .saturating_sub(boundary_ns);
        let mut times = self.cycle_us.lock().expect("cycle times");
        if times.len() >= 256 {
            times.remove(0);
        }
        times.push(since_ns as f64 / 1e3);
        drop(times);
        let mut c = self.coordinator.lock().expect("coordinator");
        c.cluster().record_history(interval.as_secs_f64());
        drop(c);
        if let Some(m) = &self.metrics {
            let c = self.coordinator.lock().expect("coordinator");
            m.record_coordinator(cycle, since_ns as f64 / 1e9, &c, interval);
        }
    }
}

/// Starts the thread that applies reports and computes the global's cycles; without it
/// nothing is ever computed, so a failure to start it fails the daemon's start.
pub fn start_cycles(global: &Arc<Global>) -> std::io::Result<()> {
    let cycles = global.clone();
    std::thread::Builder::new()
        .name("sluice-cycles".into())
        .spawn(move || cycles.run_cycles())
        .map(drop)
}

/// The timer of the global's cycles ([`start_cycles`] runs them): at each cycle's
/// deadline (half an interval after its boundary), has it computed with what was
/// reported.
pub async fn run_deadlines(global: Arc<Global>) {
    loop {
        let interval = Duration::from_nanos(global.interval_ns.load(Ordering::Relaxed));
        let (_, until_next) = global.clock.cycle_at(interval);
        tokio::time::sleep(until_next + interval / 2).await;
        // The cycle that closed half an interval ago, in the unit the sessions count in
        // (the interval may have changed during the sleep).
        let mut sessions = global.sessions();
        let (cycle, _) = global.clock.cycle_at(sessions.unit);
        if sessions.close(cycle) {
            global.wake(&mut sessions);
        }
    }
}
