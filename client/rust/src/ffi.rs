//! The C API of libzcal (client/include/zcal/zcal.h), declared by hand: the
//! few functions this crate calls and the structs they fill, with the
//! layout of the header (checked in the tests below and by size here).

use std::os::raw::{c_char, c_int};

/// `zcal_handle`: opaque.
#[repr(C)]
pub struct Handle {
    _private: [u8; 0],
}

/// `struct zcal_key`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RawKey {
    pub family: u8,
    pub reserved: [u8; 7],
    pub address: [u8; 16],
    pub interface: [c_char; 16],
}

/// `struct zcal_result`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RawResult {
    pub zerocopy_from_bytes: u64,
    pub threshold_bytes: u64,
    pub generation: u64,
    pub measured_at_ns: u64,
    pub age_ns: u64,
    pub heartbeat_age_ns: u64,
    pub fingerprint: u64,
    pub confidence_ppm: u32,
    pub verdict: u8,
    pub reason: u8,
    pub method: u8,
    pub scope: u8,
    pub prefix_len: u8,
    pub stale: u8,
    pub has_threshold: u8,
    pub estimated: u8,
    pub depth_class: u16,
    pub depth_fallback: u8,
    pub contradicted: u8,
}

/// The handle pointer of `struct zcal_guard`, in a 64-bit word on every
/// target, as in the header.
#[repr(C)]
#[derive(Clone, Copy)]
pub union HandleWord {
    pub handle: *mut Handle,
    pub word: u64,
}

/// `struct zcal_guard`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RawGuard {
    pub size: u32,
    pub method: u8,
    pub fallback: u8,
    pub state: u8,
    pub have_result: u8,
    pub generation: u64,
    pub max_age_ns: u64,
    pub sends_until_retry: u64,
    pub retry_sends: u64,
    pub completions: u64,
    pub copied: u64,
    pub turned_off: u64,
    pub sends_until_lookup: u64,
    pub handle: HandleWord,
    pub key: RawKey,
    pub result: RawResult,
    pub in_flight: u64,
    pub class_from_bytes: [u64; DEPTH_CLASSES],
    pub unreported: u32,
    pub depth_class: u16,
    pub class_fallbacks: u8,
    pub class_no_answer: u8,
    pub report_cell: u16,
    pub class_contradicted: u8,
    pub reserved: [u8; 13],
}

const _: () = assert!(std::mem::size_of::<RawKey>() == 40);
const _: () = assert!(std::mem::size_of::<RawResult>() == 72);
const _: () = assert!(std::mem::size_of::<RawGuard>() == 256);

/// `ZCAL_DEPTH_*`: the codes of the depth classes (the code is the depth;
/// 0 a stream), and the depth from which a connection is a stream.
pub const DEPTH_STREAM: u16 = 0;
pub const DEPTH_1: u16 = 1;
pub const DEPTH_4: u16 = 4;
pub const DEPTH_16: u16 = 16;
pub const DEPTH_STREAM_FROM: u32 = 32;
pub const DEPTH_CLASSES: usize = 4;

pub const FAMILY_IPV4: u8 = 4;
pub const FAMILY_IPV6: u8 = 6;

extern "C" {
    pub fn zcal_open(name: *const c_char, out: *mut *mut Handle) -> c_int;
    pub fn zcal_close(handle: *mut Handle);
    pub fn zcal_generation(handle: *const Handle) -> u64;
    pub fn zcal_refresh(handle: *mut Handle) -> c_int;
    pub fn zcal_lookup(
        handle: *mut Handle,
        key: *const RawKey,
        method: u8,
        out: *mut RawResult,
    ) -> c_int;
    pub fn zcal_lookup_depth(
        handle: *mut Handle,
        key: *const RawKey,
        method: u8,
        depth: u32,
        out: *mut RawResult,
    ) -> c_int;
    pub fn zcal_depth_class(depth: u32) -> u16;
    pub fn zcal_lookup_fd(handle: *mut Handle, fd: c_int, method: u8, out: *mut RawResult)
        -> c_int;
    pub fn zcal_error_detail() -> *const c_char;
    pub fn zcal_guard_init(
        guard: *mut RawGuard,
        guard_size: usize,
        handle: *mut Handle,
        fd: c_int,
        method: u8,
        fallback: c_int,
        max_age_ns: u64,
    ) -> c_int;
    pub fn zcal_guard_init_key(
        guard: *mut RawGuard,
        guard_size: usize,
        handle: *mut Handle,
        key: *const RawKey,
        method: u8,
        fallback: c_int,
        max_age_ns: u64,
    ) -> c_int;
    pub fn zcal_guard_should_zerocopy(guard: *mut RawGuard, size_bytes: u64) -> c_int;
    pub fn zcal_guard_completed(guard: *mut RawGuard, completions: u64, copied: u64) -> c_int;
    pub fn zcal_report_open(name: *const c_char) -> c_int;
    pub fn zcal_report_close();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::MaybeUninit;
    use std::ptr::addr_of;

    fn offset<T, F>(base: &MaybeUninit<T>, field: *const F) -> usize {
        field as usize - base.as_ptr() as usize
    }

    #[test]
    fn layouts_match_the_header() {
        let guard = MaybeUninit::<RawGuard>::uninit();
        let g = guard.as_ptr();
        // SAFETY: addr_of! computes field addresses without reading them.
        unsafe {
            assert_eq!(offset(&guard, addr_of!((*g).generation)), 8);
            assert_eq!(offset(&guard, addr_of!((*g).turned_off)), 56);
            assert_eq!(offset(&guard, addr_of!((*g).sends_until_lookup)), 64);
            assert_eq!(offset(&guard, addr_of!((*g).handle)), 72);
            assert_eq!(offset(&guard, addr_of!((*g).key)), 80);
            assert_eq!(offset(&guard, addr_of!((*g).result)), 120);
            assert_eq!(offset(&guard, addr_of!((*g).in_flight)), 192);
            assert_eq!(offset(&guard, addr_of!((*g).class_from_bytes)), 200);
            assert_eq!(offset(&guard, addr_of!((*g).unreported)), 232);
            assert_eq!(offset(&guard, addr_of!((*g).depth_class)), 236);
            assert_eq!(offset(&guard, addr_of!((*g).class_fallbacks)), 238);
            assert_eq!(offset(&guard, addr_of!((*g).class_no_answer)), 239);
            assert_eq!(offset(&guard, addr_of!((*g).report_cell)), 240);
            assert_eq!(offset(&guard, addr_of!((*g).class_contradicted)), 242);
            assert_eq!(offset(&guard, addr_of!((*g).reserved)), 243);
        }
        let result = MaybeUninit::<RawResult>::uninit();
        let r = result.as_ptr();
        // SAFETY: as above.
        unsafe {
            assert_eq!(offset(&result, addr_of!((*r).confidence_ppm)), 56);
            assert_eq!(offset(&result, addr_of!((*r).verdict)), 60);
            assert_eq!(offset(&result, addr_of!((*r).estimated)), 67);
            assert_eq!(offset(&result, addr_of!((*r).depth_class)), 68);
            assert_eq!(offset(&result, addr_of!((*r).depth_fallback)), 70);
            assert_eq!(offset(&result, addr_of!((*r).contradicted)), 71);
        }
        let key = MaybeUninit::<RawKey>::uninit();
        let k = key.as_ptr();
        // SAFETY: as above.
        unsafe {
            assert_eq!(offset(&key, addr_of!((*k).address)), 8);
            assert_eq!(offset(&key, addr_of!((*k).interface)), 24);
        }
    }
}
