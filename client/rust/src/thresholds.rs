//! The segment the zcal agent publishes, and the answers read from it.

use std::ffi::CString;
use std::net::IpAddr;
use std::os::unix::io::AsRawFd;
use std::ptr::{self, NonNull};
use std::time::Duration;

use crate::error::Error;
use crate::ffi;

/// A send method, with the codes of the ABI (`ZCAL_METHOD_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Method {
    Copy = 0,
    MsgZerocopy = 1,
    UringSend = 2,
    UringSendZc = 3,
    UringSendZcFixed = 4,
}

/// What the agent decided for a peer and method (`ZCAL_VERDICT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Zerocopy from [`Answer::threshold_bytes`] on.
    Threshold,
    /// Zerocopy at every size.
    Always,
    /// Never zerocopy; [`Answer::reason`] says why.
    Never,
    /// The agent could not decide.
    Inconclusive,
    /// A code a later agent may publish.
    Unknown(u8),
}

/// Which published scope answered (`ZCAL_SCOPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    HostDefault,
    Loopback,
    /// A peer network of [`Answer::prefix_len`] bits.
    Peer,
    Interface,
    Unknown(u8),
}

/// How many zerocopy sends of a connection were in flight when an answer
/// was measured (`ZCAL_DEPTH_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepthClass {
    /// One in flight: each send waits for the completion of the last.
    One,
    Four,
    Sixteen,
    /// A bulk stream: [`DEPTH_STREAM_FROM`] or more in flight.
    Stream,
    /// A code a later agent may publish.
    Unknown(u16),
}

/// A connection with this many zerocopy sends in flight or more is a stream.
pub const DEPTH_STREAM_FROM: u32 = ffi::DEPTH_STREAM_FROM;

impl DepthClass {
    pub(crate) fn from_code(code: u16) -> DepthClass {
        match code {
            ffi::DEPTH_1 => DepthClass::One,
            ffi::DEPTH_4 => DepthClass::Four,
            ffi::DEPTH_16 => DepthClass::Sixteen,
            ffi::DEPTH_STREAM => DepthClass::Stream,
            other => DepthClass::Unknown(other),
        }
    }

    /// The class of a connection with `depth` zerocopy sends in flight,
    /// counting the one being decided: the largest class at or below it
    /// (`zcal_depth_class`).
    pub fn of_depth(depth: u32) -> DepthClass {
        // SAFETY: a pure function of its argument.
        DepthClass::from_code(unsafe { ffi::zcal_depth_class(depth) })
    }
}

/// One answer of [`Thresholds::lookup`]: a copy, valid until the segment's
/// generation changes ([`Thresholds::generation`]).
#[derive(Clone, Copy)]
pub struct Answer {
    raw: ffi::RawResult,
}

impl Answer {
    pub fn verdict(&self) -> Verdict {
        match self.raw.verdict {
            0 => Verdict::Threshold,
            1 => Verdict::Always,
            2 => Verdict::Never,
            3 => Verdict::Inconclusive,
            other => Verdict::Unknown(other),
        }
    }
    /// The published threshold, when the entry has one.
    pub fn threshold_bytes(&self) -> Option<u64> {
        (self.raw.has_threshold != 0).then(|| self.raw.threshold_bytes)
    }
    /// Sizes from this one on go with zerocopy: the threshold, 0 for
    /// always, `u64::MAX` for never and inconclusive.
    pub fn zerocopy_from_bytes(&self) -> u64 {
        self.raw.zerocopy_from_bytes
    }
    /// Whether to send `len` bytes with zerocopy; None when the verdict
    /// says nothing (inconclusive, or unknown to this binding).
    pub fn should_zerocopy(&self, len: u64) -> Option<bool> {
        match self.verdict() {
            Verdict::Threshold | Verdict::Always | Verdict::Never => {
                Some(len >= self.raw.zerocopy_from_bytes)
            }
            _ => None,
        }
    }
    pub fn scope(&self) -> Scope {
        match self.raw.scope {
            0 => Scope::HostDefault,
            1 => Scope::Loopback,
            2 => Scope::Peer,
            3 => Scope::Interface,
            other => Scope::Unknown(other),
        }
    }
    /// Bits of the matching peer network; 0 for other scopes.
    pub fn prefix_len(&self) -> u8 {
        self.raw.prefix_len
    }
    /// `ZCAL_REASON_*` of a never or inconclusive verdict (0: none).
    pub fn reason(&self) -> u8 {
        self.raw.reason
    }
    /// Confidence in [0, 1], when the agent knows it.
    pub fn confidence(&self) -> Option<f64> {
        (self.raw.confidence_ppm != u32::MAX).then(|| f64::from(self.raw.confidence_ppm) / 1e6)
    }
    /// The segment generation this answer was read at.
    pub fn generation(&self) -> u64 {
        self.raw.generation
    }
    /// Since the measurement.
    pub fn age(&self) -> Duration {
        Duration::from_nanos(self.raw.age_ns)
    }
    /// Since the agent last showed life: is it still running?
    pub fn heartbeat_age(&self) -> Duration {
        Duration::from_nanos(self.raw.heartbeat_age_ns)
    }
    /// Republished at the agent's start and not yet confirmed.
    pub fn stale(&self) -> bool {
        self.raw.stale != 0
    }
    /// An estimate (a host default from the discard path), not a
    /// measurement of this peer's path.
    pub fn estimated(&self) -> bool {
        self.raw.estimated != 0
    }
    /// The applications' own sends contradict this entry (their reports
    /// show the kernel copying): the answer is copy at every size until the
    /// agent clears the flag; `verdict` and `threshold` stay as published.
    pub fn contradicted(&self) -> bool {
        self.raw.contradicted != 0
    }
    /// The depth class of the entry that answered.
    pub fn depth_class(&self) -> DepthClass {
        DepthClass::from_code(self.raw.depth_class)
    }
    /// A depth lookup found no entry of its class for the matching scope
    /// (an older agent, a class not calibrated) and answered with that
    /// scope's stream entry.
    pub fn depth_fallback(&self) -> bool {
        self.raw.depth_fallback != 0
    }
}

/// The key libzcal looks up for a peer: IPv4-mapped IPv6 addresses as IPv4.
pub(crate) fn key_of(peer: IpAddr) -> ffi::RawKey {
    let mut key = ffi::RawKey {
        family: 0,
        reserved: [0; 7],
        address: [0; 16],
        interface: [0; 16],
    };
    let v4 = match peer {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    };
    if let Some(v4) = v4 {
        key.family = ffi::FAMILY_IPV4;
        key.address[..4].copy_from_slice(&v4.octets());
    } else if let IpAddr::V6(v6) = peer {
        key.family = ffi::FAMILY_IPV6;
        key.address = v6.octets();
    }
    key
}

fn empty_result() -> ffi::RawResult {
    // SAFETY: RawResult is plain integers; all zeros is a valid value.
    unsafe { std::mem::zeroed() }
}

/// A mapped zcal segment (`zcal_handle`). Send, not Sync: one thread uses
/// it at a time, as libzcal requires; a [`crate::Guard`] borrows it.
pub struct Thresholds {
    handle: NonNull<ffi::Handle>,
}

// SAFETY: a zcal_handle may move between threads; it is not Sync, so
// no two threads call into it at once.
unsafe impl Send for Thresholds {}

impl Thresholds {
    /// Opens the segment `name` ("/zcal"), maps it read-only and takes a
    /// first consistent copy of its table.
    pub fn open(name: &str) -> Result<Thresholds, Error> {
        let name = CString::new(name).map_err(|_| {
            Error::InvalidArgument(format!("segment name {:?} contains a NUL byte", name))
        })?;
        Self::open_raw(name.as_ptr())
    }

    /// Opens `$ZCAL_SEGMENT`, or "/zcal" when it is unset.
    pub fn open_default() -> Result<Thresholds, Error> {
        Self::open_raw(ptr::null())
    }

    fn open_raw(name: *const std::os::raw::c_char) -> Result<Thresholds, Error> {
        let mut handle = ptr::null_mut();
        // SAFETY: name is NULL or a NUL-terminated string; handle is an
        // out-pointer that zcal_open sets (NULL on failure).
        let rc = unsafe { ffi::zcal_open(name, &mut handle) };
        if rc != 0 {
            return Err(Error::from_rc(rc));
        }
        NonNull::new(handle)
            .map(|handle| Thresholds { handle })
            .ok_or(Error::OutOfMemory)
    }

    pub(crate) fn raw(&self) -> *mut ffi::Handle {
        self.handle.as_ptr()
    }

    /// Changes on every publish and when the agent restarted: keep an
    /// [`Answer`] while this equals its [`Answer::generation`]. One load.
    pub fn generation(&self) -> u64 {
        // SAFETY: the handle is open until drop.
        unsafe { ffi::zcal_generation(self.raw()) }
    }

    /// Re-checks the segment's name and maps a replaced segment.
    pub fn refresh(&self) -> Result<(), Error> {
        // SAFETY: the handle is open until drop.
        let rc = unsafe { ffi::zcal_refresh(self.raw()) };
        if rc == 0 {
            Ok(())
        } else {
            Err(Error::from_rc(rc))
        }
    }

    /// The entry that answers `peer` and `method`: the longest matching
    /// peer prefix, else loopback, else the host default.
    pub fn lookup(&self, peer: IpAddr, method: Method) -> Result<Answer, Error> {
        let key = key_of(peer);
        let mut raw = empty_result();
        // SAFETY: the handle is open; key and raw are valid for the call.
        let rc = unsafe { ffi::zcal_lookup(self.raw(), &key, method as u8, &mut raw) };
        if rc == 0 {
            Ok(Answer { raw })
        } else {
            Err(Error::from_rc(rc))
        }
    }

    /// [`Thresholds::lookup`] for a connection with `depth` zerocopy sends
    /// in flight, counting this one: the entry of the depth's class in the
    /// matching scope, or that scope's stream entry
    /// ([`Answer::depth_fallback`]). `lookup` answers for a stream.
    pub fn lookup_depth(&self, peer: IpAddr, method: Method, depth: u32) -> Result<Answer, Error> {
        let key = key_of(peer);
        let mut raw = empty_result();
        // SAFETY: the handle is open; key and raw are valid for the call.
        let rc =
            unsafe { ffi::zcal_lookup_depth(self.raw(), &key, method as u8, depth, &mut raw) };
        if rc == 0 {
            Ok(Answer { raw })
        } else {
            Err(Error::from_rc(rc))
        }
    }

    /// [`Thresholds::lookup`] for a connected socket's peer (a `TcpStream`,
    /// or a raw descriptor).
    pub fn lookup_socket<S: AsRawFd>(&self, socket: &S, method: Method) -> Result<Answer, Error> {
        let mut raw = empty_result();
        // SAFETY: the handle is open; raw is valid for the call; any fd
        // value is safe to pass (getpeername reports bad ones).
        let rc =
            unsafe { ffi::zcal_lookup_fd(self.raw(), socket.as_raw_fd(), method as u8, &mut raw) };
        if rc == 0 {
            Ok(Answer { raw })
        } else {
            Err(Error::from_rc(rc))
        }
    }

    /// Whether to send `len` bytes on `socket` with zerocopy, from the
    /// threshold published for its peer. `Err` means the agent has no
    /// answer ([`Error::NoEntry`], [`Error::Inconclusive`], the segment
    /// unreadable): use your own default, or [`Thresholds::should_zerocopy_or`].
    /// A full lookup per call (about 20 ns); per send, prefer a cached
    /// [`Answer`] or a [`crate::Guard`].
    pub fn should_zerocopy<S: AsRawFd>(
        &self,
        socket: &S,
        len: u64,
        method: Method,
    ) -> Result<bool, Error> {
        self.lookup_socket(socket, method)?
            .should_zerocopy(len)
            .ok_or(Error::Inconclusive)
    }

    /// [`Thresholds::should_zerocopy`], with `fallback` for every error.
    pub fn should_zerocopy_or<S: AsRawFd>(
        &self,
        socket: &S,
        len: u64,
        method: Method,
        fallback: bool,
    ) -> bool {
        self.should_zerocopy(socket, len, method)
            .unwrap_or(fallback)
    }
}

impl Drop for Thresholds {
    fn drop(&mut self) {
        // SAFETY: the handle came from zcal_open and is closed once.
        unsafe { ffi::zcal_close(self.raw()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn keys_put_ipv4_in_the_first_four_bytes_and_unmap_mapped_addresses() {
        let key = key_of(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)));
        assert_eq!(key.family, ffi::FAMILY_IPV4);
        assert_eq!(&key.address[..5], &[192, 0, 2, 7, 0]);
        let mapped = key_of(IpAddr::V6(Ipv4Addr::new(10, 1, 2, 3).to_ipv6_mapped()));
        assert_eq!(mapped.family, ffi::FAMILY_IPV4);
        assert_eq!(&mapped.address[..4], &[10, 1, 2, 3]);
        let v6: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let key = key_of(IpAddr::V6(v6));
        assert_eq!(key.family, ffi::FAMILY_IPV6);
        assert_eq!(key.address, v6.octets());
    }

    #[test]
    fn answers_decide_by_verdict() {
        let mut raw = empty_result();
        raw.verdict = 0;
        raw.zerocopy_from_bytes = 4096;
        raw.has_threshold = 1;
        raw.threshold_bytes = 4096;
        raw.confidence_ppm = u32::MAX;
        let answer = Answer { raw };
        assert_eq!(answer.should_zerocopy(4095), Some(false));
        assert_eq!(answer.should_zerocopy(4096), Some(true));
        assert_eq!(answer.threshold_bytes(), Some(4096));
        assert_eq!(answer.confidence(), None);
        raw.verdict = 3;
        assert_eq!(Answer { raw }.should_zerocopy(1 << 20), None);
        raw.verdict = 9;
        assert_eq!(Answer { raw }.verdict(), Verdict::Unknown(9));
        assert_eq!(Answer { raw }.should_zerocopy(1 << 20), None);
    }

    #[test]
    fn a_name_with_a_nul_is_an_invalid_argument() {
        assert!(matches!(Thresholds::open("/a\0b"), Err(Error::InvalidArgument(_))));
    }
}
