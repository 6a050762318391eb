//! Rust binding of libzcal: the per-host zerocopy send thresholds the zcal
//! agent publishes in shared memory, and a per-connection guard that turns
//! zerocopy off for connections the kernel copies anyway.
//!
//! ```no_run
//! use std::net::TcpStream;
//! use zcal::{Guard, Method, Thresholds};
//!
//! let thresholds = Thresholds::open_default().ok(); // None: no agent
//! let stream = TcpStream::connect("192.0.2.7:9000").unwrap();
//! let mut guard =
//!     Guard::new(thresholds.as_ref(), &stream, Method::MsgZerocopy, false, None).unwrap();
//! let zerocopy = guard.should_zerocopy(65536); // per send, a few ns
//! // ... send with MSG_ZEROCOPY or not; per completion from MSG_ERRQUEUE:
//! guard.completed(1, 1).unwrap(); // 1 completion, copied by the kernel
//! # let _ = zerocopy;
//! ```
//!
//! Reporting what the process sent to the agent: [`report`].
//!
//! Linux only. Links libzcal (`libzcal-dev`, or `ZCAL_LIB_DIR` at build
//! time). See README.md.

#![cfg(target_os = "linux")]

mod error;
mod ffi;
mod guard;
pub mod report;
mod thresholds;

pub use error::Error;
pub use guard::{Guard, GuardState, RETRY_SENDS, RETRY_SENDS_MAX};
pub use thresholds::{Answer, DepthClass, Method, Scope, Thresholds, Verdict, DEPTH_STREAM_FROM};
