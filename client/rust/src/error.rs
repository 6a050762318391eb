//! libzcal's `-errno` returns as a Rust enum, with the sentence
//! `zcal_error_detail()` gives for people.

use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_int;

use crate::ffi;

// The Linux values (asm-generic/errno*.h); the crate is Linux-only.
const ENOENT: i32 = 2;
const EBADF: i32 = 9;
const EAGAIN: i32 = 11;
const ENOMEM: i32 = 12;
const EACCES: i32 = 13;
const EINVAL: i32 = 22;
const ENODATA: i32 = 61;
const EPROTO: i32 = 71;
const ENOTSOCK: i32 = 88;
const EAFNOSUPPORT: i32 = 97;
const ENOTCONN: i32 = 107;
const ESTALE: i32 = 116;

/// Why libzcal gave no answer. Each variant carrying a `String` has the
/// sentence libzcal wrote for it (which segment, which field, what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// `-ENOENT`: no segment of that name; no agent has published here.
    NoSegment(String),
    /// `-EPROTO`: the segment is incompatible (magic, major version),
    /// corrupt, or writable by every user.
    Corrupt(String),
    /// `-ESTALE`: the segment file changed size under the handle; it is no
    /// longer read, and its name is reopened at most once a second.
    Stale(String),
    /// `-EAGAIN`: the writer held the seqlock beyond the retry bound.
    Busy(String),
    /// `-EACCES`: not allowed to open the segment (its mode and group).
    PermissionDenied(String),
    /// `-EINVAL`: a bad argument (a malformed segment name, a NUL in it,
    /// more copied completions than completions).
    InvalidArgument(String),
    /// `-ENOMEM`.
    OutOfMemory,
    /// `-ENODATA`: no entry answers this peer and method.
    NoEntry,
    /// `-ENOTCONN`: the socket is not connected.
    NotConnected,
    /// `-EBADF`: not an open file descriptor.
    BadDescriptor,
    /// `-ENOTSOCK`: the descriptor is not a socket.
    NotASocket,
    /// `-EAFNOSUPPORT`: not an IPv4 or IPv6 socket.
    NotAnIpSocket,
    /// Not an errno: the entry's verdict is inconclusive (or a code this
    /// binding does not know), so it says nothing about this size.
    Inconclusive,
    /// Any other `-errno`, with libzcal's sentence.
    Os(i32, String),
}

impl Error {
    /// The error for a negative return `rc` of a libzcal function, with the
    /// calling thread's `zcal_error_detail()`.
    pub(crate) fn from_rc(rc: c_int) -> Error {
        let errno = -rc;
        let detail = detail();
        match errno {
            ENOENT => Error::NoSegment(detail),
            EPROTO => Error::Corrupt(detail),
            ESTALE => Error::Stale(detail),
            EAGAIN => Error::Busy(detail),
            EACCES => Error::PermissionDenied(detail),
            EINVAL => Error::InvalidArgument(detail),
            ENOMEM => Error::OutOfMemory,
            ENODATA => Error::NoEntry,
            ENOTCONN => Error::NotConnected,
            EBADF => Error::BadDescriptor,
            ENOTSOCK => Error::NotASocket,
            EAFNOSUPPORT => Error::NotAnIpSocket,
            _ => Error::Os(errno, detail),
        }
    }

    /// The positive errno value, or None for [`Error::Inconclusive`].
    pub fn errno(&self) -> Option<i32> {
        Some(match self {
            Error::NoSegment(_) => ENOENT,
            Error::Corrupt(_) => EPROTO,
            Error::Stale(_) => ESTALE,
            Error::Busy(_) => EAGAIN,
            Error::PermissionDenied(_) => EACCES,
            Error::InvalidArgument(_) => EINVAL,
            Error::OutOfMemory => ENOMEM,
            Error::NoEntry => ENODATA,
            Error::NotConnected => ENOTCONN,
            Error::BadDescriptor => EBADF,
            Error::NotASocket => ENOTSOCK,
            Error::NotAnIpSocket => EAFNOSUPPORT,
            Error::Inconclusive => return None,
            Error::Os(errno, _) => *errno,
        })
    }

    /// libzcal's sentence, when it wrote one.
    pub fn detail(&self) -> &str {
        match self {
            Error::NoSegment(d)
            | Error::Corrupt(d)
            | Error::Stale(d)
            | Error::Busy(d)
            | Error::PermissionDenied(d)
            | Error::InvalidArgument(d)
            | Error::Os(_, d) => d,
            _ => "",
        }
    }
}

fn detail() -> String {
    // SAFETY: zcal_error_detail returns a NUL-terminated per-thread buffer
    // that stays valid until this thread's next libzcal call.
    unsafe { CStr::from_ptr(ffi::zcal_error_detail()) }
        .to_string_lossy()
        .into_owned()
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Error::Inconclusive => return f.write_str("the verdict is inconclusive"),
            Error::Os(errno, _) => std::io::Error::from_raw_os_error(*errno).to_string(),
            other => std::io::Error::from_raw_os_error(other.errno().unwrap_or(0)).to_string(),
        };
        if self.detail().is_empty() {
            write!(f, "{}", what)
        } else {
            write!(f, "{}: {}", what, self.detail())
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_errno_maps_to_its_variant_and_back() {
        for errno in [
            ENOENT,
            EPROTO,
            ESTALE,
            EAGAIN,
            EACCES,
            EINVAL,
            ENOMEM,
            ENODATA,
            ENOTCONN,
            EBADF,
            ENOTSOCK,
            EAFNOSUPPORT,
            5, // EIO: not one of libzcal's, kept as Os
        ] {
            let error = Error::from_rc(-errno);
            assert_eq!(error.errno(), Some(errno), "{:?}", error);
        }
        assert!(matches!(Error::from_rc(-5), Error::Os(5, _)));
        assert_eq!(Error::Inconclusive.errno(), None);
    }

    #[test]
    fn display_says_the_errno_and_the_detail() {
        let e = Error::NoSegment("no segment /x".to_string());
        let text = e.to_string();
        assert!(text.contains("No such file"), "{}", text);
        assert!(text.ends_with(": no segment /x"), "{}", text);
        assert!(Error::NoEntry.to_string().starts_with("No data available"));
    }
}
