//! The process's report (libzcal 1.3): what this process's guards answered
//! and what the kernel did with its zerocopy sends, counted in a
//! shared-memory object of its own (`/dev/shm/zcal-report-<pid>`) for the
//! zcal agent to read. Off unless turned on, here or by `ZCAL_REPORT=NAME`
//! in the environment (read by libzcal at the first [`crate::Thresholds`]
//! or [`crate::Guard`]).
//!
//! What is counted: every [`crate::Guard::should_zerocopy`] and
//! [`crate::Guard::completed`]. [`crate::Thresholds::should_zerocopy`] and
//! [`crate::Answer`] decide from a lookup and are not counted: send
//! through a guard to be seen. Per send, no system call and no allocation;
//! any thread may send, open or close.

use std::ffi::CString;

use crate::error::Error;
use crate::ffi;

/// Turns reporting on under the application name `name` (1 to 63 bytes,
/// no `/`, no control characters). `Err(Error::Os(16, _))` (EBUSY) when a
/// report is open already; `Err(Error::Os(17, _))` (EEXIST) when an
/// object of this pid is left over from a dead process; see the detail.
pub fn open(name: &str) -> Result<(), Error> {
    let name = CString::new(name).map_err(|_| {
        Error::InvalidArgument("report: the application name has a NUL byte".to_string())
    })?;
    // SAFETY: a NUL-terminated string that outlives the call.
    let rc = unsafe { ffi::zcal_report_open(name.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Error::from_rc(rc))
    }
}

/// Marks the object closed, its counts final, and leaves it for a live agent
/// to fold and remove, or removes it when none is there (`zcal.h`,
/// `zcal_report_close`); reporting is off until the next [`open`]. Nothing
/// happens when none is open.
pub fn close() {
    // SAFETY: no arguments; safe to call from any thread at any time.
    unsafe { ffi::zcal_report_close() }
}
