//! The per-connection guard (`struct zcal_guard`): the threshold's answer,
//! turned off for a connection whose zerocopy sends the kernel copies.

use std::marker::PhantomData;
use std::net::IpAddr;
use std::os::raw::c_int;
use std::os::unix::io::AsRawFd;
use std::ptr;
use std::time::Duration;

use crate::error::Error;
use crate::ffi;
use crate::thresholds::{key_of, DepthClass, Method, Thresholds};

/// After a copied completion the guard answers no to this many sends (that
/// the threshold would have sent with zerocopy) before it probes again.
pub const RETRY_SENDS: u64 = 1024;
/// Each probe that is copied again doubles the wait, up to this.
pub const RETRY_SENDS_MAX: u64 = 1 << 20;

/// `ZCAL_GUARD_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardState {
    /// Zerocopy as the threshold says.
    On,
    /// Copied completions seen: copy, until [`Guard::sends_until_retry`]
    /// more sends went by.
    Off,
    /// Trying zerocopy again; the next completions decide.
    Probing,
}

/// One connection's guard. Borrows the [`Thresholds`] it reads (or none:
/// no agent, the fallback is guarded the same way). Per send,
/// [`Guard::should_zerocopy`] makes no system call and never allocates;
/// every zerocopy completion goes to [`Guard::completed`] with whether the
/// kernel copied it (`SO_EE_CODE_ZEROCOPY_COPIED` of a `MSG_ZEROCOPY`
/// notification, `IORING_NOTIF_USAGE_ZC_COPIED` of an io_uring one).
pub struct Guard<'a> {
    raw: ffi::RawGuard,
    _thresholds: PhantomData<&'a Thresholds>,
}

fn max_age_ns(max_age: Option<Duration>) -> u64 {
    max_age.map_or(0, |age| u64::try_from(age.as_nanos()).unwrap_or(u64::MAX).max(1))
}

fn zeroed() -> ffi::RawGuard {
    // SAFETY: RawGuard is integers and a pointer; all zeros is valid.
    unsafe { std::mem::zeroed() }
}

fn handle_of(thresholds: Option<&Thresholds>) -> *mut ffi::Handle {
    thresholds.map_or(ptr::null_mut(), Thresholds::raw)
}

impl<'a> Guard<'a> {
    /// For a connected socket, keyed by its peer. `fallback` answers when
    /// no entry does; an answer whose agent heartbeat is older than
    /// `max_age` is not used (None: no bound).
    pub fn new<S: AsRawFd>(
        thresholds: Option<&'a Thresholds>,
        socket: &S,
        method: Method,
        fallback: bool,
        max_age: Option<Duration>,
    ) -> Result<Guard<'a>, Error> {
        let mut raw = zeroed();
        // SAFETY: raw is a RawGuard of the size passed; the handle (or NULL)
        // outlives the guard through the borrow 'a.
        let rc = unsafe {
            ffi::zcal_guard_init(
                &mut raw,
                std::mem::size_of::<ffi::RawGuard>(),
                handle_of(thresholds),
                socket.as_raw_fd(),
                method as u8,
                c_int::from(fallback),
                max_age_ns(max_age),
            )
        };
        Self::made(rc, raw)
    }

    /// For a peer address, without a socket.
    pub fn for_peer(
        thresholds: Option<&'a Thresholds>,
        peer: IpAddr,
        method: Method,
        fallback: bool,
        max_age: Option<Duration>,
    ) -> Result<Guard<'a>, Error> {
        let key = key_of(peer);
        let mut raw = zeroed();
        // SAFETY: as in new; key is valid for the call.
        let rc = unsafe {
            ffi::zcal_guard_init_key(
                &mut raw,
                std::mem::size_of::<ffi::RawGuard>(),
                handle_of(thresholds),
                &key,
                method as u8,
                c_int::from(fallback),
                max_age_ns(max_age),
            )
        };
        Self::made(rc, raw)
    }

    fn made(rc: c_int, raw: ffi::RawGuard) -> Result<Guard<'a>, Error> {
        if rc != 0 {
            return Err(Error::from_rc(rc));
        }
        Ok(Guard {
            raw,
            _thresholds: PhantomData,
        })
    }

    /// Per send: whether to send `len` bytes with zerocopy.
    pub fn should_zerocopy(&mut self, len: u64) -> bool {
        // SAFETY: raw was initialised by zcal_guard_init*; its handle lives.
        unsafe { ffi::zcal_guard_should_zerocopy(&mut self.raw, len) != 0 }
    }

    /// Reports `completions` zerocopy completions, `copied` of them copied
    /// by the kernel. [`Error::InvalidArgument`] when copied > completions.
    pub fn completed(&mut self, completions: u64, copied: u64) -> Result<(), Error> {
        // SAFETY: as above.
        let rc = unsafe { ffi::zcal_guard_completed(&mut self.raw, completions, copied) };
        if rc == 0 {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{} of {} completions reported as copied",
                copied, completions
            )))
        }
    }

    pub fn state(&self) -> GuardState {
        match self.raw.state {
            0 => GuardState::On,
            1 => GuardState::Off,
            _ => GuardState::Probing,
        }
    }
    /// Off: sends still answered no before the next probe.
    pub fn sends_until_retry(&self) -> u64 {
        self.raw.sends_until_retry
    }
    /// How long the next (or current) off lasts, in sends.
    pub fn retry_sends(&self) -> u64 {
        self.raw.retry_sends
    }
    pub fn completions(&self) -> u64 {
        self.raw.completions
    }
    pub fn copied(&self) -> u64 {
        self.raw.copied
    }
    /// Times the guard went off.
    pub fn turned_off(&self) -> u64 {
        self.raw.turned_off
    }
    /// The depth class of the last answer: the class of the sends in flight
    /// (answered yes, not yet reported complete) plus the send decided.
    pub fn depth_class(&self) -> DepthClass {
        DepthClass::from_code(self.raw.depth_class)
    }
    /// Sends answered yes and not yet reported complete.
    pub fn in_flight(&self) -> u64 {
        self.raw.in_flight
    }
    /// Whether an agent's answer is in use (else the fallback).
    pub fn has_answer(&self) -> bool {
        self.raw.have_result != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn unpublished(fallback: bool) -> Guard<'static> {
        Guard::for_peer(
            None,
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
            Method::MsgZerocopy,
            fallback,
            None,
        )
        .unwrap()
    }

    #[test]
    fn without_an_agent_the_fallback_is_guarded() {
        let mut guard = unpublished(true);
        assert!(!guard.has_answer());
        assert!(guard.should_zerocopy(100));
        guard.completed(2, 1).unwrap();
        assert_eq!(guard.state(), GuardState::Off);
        assert_eq!(guard.turned_off(), 1);
        let noes = (0..10 * RETRY_SENDS)
            .take_while(|_| !guard.should_zerocopy(1 << 16))
            .count() as u64;
        assert_eq!(noes, RETRY_SENDS);
        assert_eq!(guard.state(), GuardState::Probing);
        guard.completed(1, 0).unwrap();
        assert_eq!(guard.state(), GuardState::On);
        assert_eq!((guard.completions(), guard.copied()), (3, 1));
        assert!(!unpublished(false).should_zerocopy(1 << 20));
    }

    #[test]
    fn more_copied_than_completions_is_an_invalid_argument() {
        let mut guard = unpublished(true);
        assert!(matches!(guard.completed(1, 2), Err(Error::InvalidArgument(_))));
        assert_eq!(guard.state(), GuardState::On);
    }

    #[test]
    fn a_descriptor_that_is_no_socket_is_refused() {
        let file = std::fs::File::open("/dev/null").unwrap();
        let err = Guard::new(None, &file, Method::MsgZerocopy, false, None)
            .err()
            .unwrap();
        assert_eq!(err, Error::NotASocket);
    }

    #[test]
    fn a_max_age_of_zero_still_bounds_the_age() {
        assert_eq!(max_age_ns(None), 0);
        assert_eq!(max_age_ns(Some(Duration::ZERO)), 1);
        assert_eq!(max_age_ns(Some(Duration::from_secs(2))), 2_000_000_000);
    }
}
