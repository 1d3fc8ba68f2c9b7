//! A worker waiting on a batch of its own from inside a job, serving the
//! broadcast calls that jobs address to it meanwhile (`README.md`, "Nesting
//! and panics").

use super::Sleep;
use crate::batch::BatchCore;
use crate::latch::WaitOutcome;

impl Sleep {
    /// Worker `w` waits for `b`'s latch from inside a job (a nested batch or
    /// broadcast) and meanwhile runs the broadcast calls that jobs of this
    /// pool addressed to it: they need this very worker, and their
    /// broadcaster may be a hand `b` waits for, so waiting without serving
    /// them could deadlock. Calls broadcast from outside the pool wait until
    /// the job ends: they cannot be part of such a cycle, and running them
    /// in the middle of a job could meet locks or borrows the job holds.
    pub(crate) fn wait_serving(&self, b: &BatchCore<'_>, w: usize) -> WaitOutcome {
        let sleep = self;
        let mut out = WaitOutcome::default();
        let mut spun = false;
        loop {
            if sleep.has_job_mail(w) {
                if let Some(t) = sleep.take_from_job(w, false) {
                    // SAFETY: a private ticket taken under the lock is
                    // counted in its batch's latch and not yet released.
                    unsafe { t.run_hand(w, None, sleep) };
                    continue;
                }
            }
            if b.latch.is_done() {
                return out;
            }
            if !spun {
                spun = true;
                out.spin_ns = b.latch.spin(sleep.window, || sleep.has_job_mail(w));
                continue;
            }
            // The last check for a private ticket and the registration for
            // a wakeup are one lock hold, as a parking worker's are.
            if let Some(t) = sleep.take_from_job(w, true) {
                // SAFETY: as above.
                unsafe { t.run_hand(w, None, sleep) };
                continue;
            }
            out.parked = true;
            if b.latch.park(|| sleep.has_job_mail(w)) {
                sleep.stop_serving(w);
                return out;
            }
        }
    }
}
