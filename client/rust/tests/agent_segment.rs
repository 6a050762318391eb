// The crate against a segment the agent's writer made: the meson test
// `client_rust` (tests/client/rust_cargo_test.cc) publishes this table and
// names the segment in ZCAL_TEST_SEGMENT:
//
//   loopback        msg_zerocopy  threshold 8192
//   10.1.0.0/16     msg_zerocopy  threshold 4096
//   10.1.0.0/16     msg_zerocopy  depth 1: threshold 16384
//   10.9.0.0/16     msg_zerocopy  inconclusive (noisy)
//   2001:db8::/32   msg_zerocopy  always
//   host default    uring_send_zc never (slower)
use std::net::{IpAddr, TcpListener, TcpStream};
use std::os::unix::io::AsRawFd;

use zcal::{DepthClass, Error, Guard, GuardState, Method, Scope, Thresholds, Verdict};

fn segment() -> Thresholds {
    let name = std::env::var("ZCAL_TEST_SEGMENT").expect(
        "ZCAL_TEST_SEGMENT names the agent's segment: run these tests through \
         `meson test client_rust` (in a build with -Drust=enabled), which writes it",
    );
    Thresholds::open(&name).unwrap_or_else(|e| panic!("open {}: {}", name, e))
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

// A connected TCP pair on 127.0.0.1; the listener side is kept open.
fn loopback_stream() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    (client, server)
}

#[test]
fn opens_the_agents_segment() {
    let thresholds = segment();
    assert_ne!(thresholds.generation(), 0);
    thresholds.refresh().unwrap();
}

#[test]
fn a_missing_segment_is_no_segment() {
    let name = format!("/zcal-rust-missing-{}", std::process::id());
    match Thresholds::open(&name) {
        Err(Error::NoSegment(detail)) => assert!(detail.contains("no zcal agent"), "{}", detail),
        other => panic!("{:?}", other.err()),
    }
    assert!(matches!(Thresholds::open("no-slash"), Err(Error::InvalidArgument(_))));
}

#[test]
fn looks_up_peers_by_address() {
    let thresholds = segment();
    let peer = thresholds.lookup(ip("10.1.2.3"), Method::MsgZerocopy).unwrap();
    assert_eq!(peer.verdict(), Verdict::Threshold);
    assert_eq!(peer.threshold_bytes(), Some(4096));
    assert_eq!(peer.scope(), Scope::Peer);
    assert_eq!(peer.prefix_len(), 16);
    assert_eq!(peer.generation(), thresholds.generation());
    assert_eq!(peer.should_zerocopy(4096), Some(true));
    assert_eq!(peer.should_zerocopy(4095), Some(false));

    let always = thresholds.lookup(ip("2001:db8::1"), Method::MsgZerocopy).unwrap();
    assert_eq!(always.verdict(), Verdict::Always);
    assert_eq!(always.should_zerocopy(1), Some(true));
    let mapped = thresholds.lookup(ip("::ffff:10.1.0.9"), Method::MsgZerocopy).unwrap();
    assert_eq!(mapped.threshold_bytes(), Some(4096), "IPv4-mapped is IPv4");

    let never = thresholds.lookup(ip("192.0.2.1"), Method::UringSendZc).unwrap();
    assert_eq!(never.verdict(), Verdict::Never);
    assert_eq!(never.scope(), Scope::HostDefault);
    assert_eq!(never.reason(), 1, "slower");
    assert_eq!(never.should_zerocopy(u64::MAX - 1), Some(false));

    assert_eq!(
        thresholds.lookup(ip("192.0.2.1"), Method::MsgZerocopy).err(),
        Some(Error::NoEntry)
    );
}

#[test]
fn looks_up_the_class_of_a_depth() {
    let thresholds = segment();
    let one = thresholds.lookup_depth(ip("10.1.2.3"), Method::MsgZerocopy, 1).unwrap();
    assert_eq!(one.threshold_bytes(), Some(16384));
    assert_eq!(one.depth_class(), DepthClass::One);
    assert!(!one.depth_fallback());
    let stream = thresholds
        .lookup_depth(ip("10.1.2.3"), Method::MsgZerocopy, zcal::DEPTH_STREAM_FROM)
        .unwrap();
    assert_eq!(stream.threshold_bytes(), Some(4096));
    assert_eq!(stream.depth_class(), DepthClass::Stream);
    let four = thresholds.lookup_depth(ip("10.1.2.3"), Method::MsgZerocopy, 4).unwrap();
    assert_eq!(four.threshold_bytes(), Some(4096), "no class 4: the stream's");
    assert!(four.depth_fallback());
    let plain = thresholds.lookup(ip("10.1.2.3"), Method::MsgZerocopy).unwrap();
    assert_eq!(plain.threshold_bytes(), Some(4096));
    assert_eq!(DepthClass::of_depth(3), DepthClass::One);
    assert_eq!(DepthClass::of_depth(16), DepthClass::Sixteen);
    assert_eq!(DepthClass::of_depth(1000), DepthClass::Stream);

    // A guard whose sends wait for their completions answers at depth 1.
    let mut guard =
        Guard::for_peer(Some(&thresholds), ip("10.1.2.3"), Method::MsgZerocopy, false, None)
            .unwrap();
    assert!(guard.should_zerocopy(16384));
    assert_eq!(guard.depth_class(), DepthClass::One);
    assert_eq!(guard.in_flight(), 1);
    guard.completed(1, 0).unwrap();
    assert!(!guard.should_zerocopy(8192), "8 KiB wins for a stream only");
}

#[test]
fn decides_for_a_connected_stream() {
    let thresholds = segment();
    let (stream, _server) = loopback_stream();
    assert_eq!(thresholds.should_zerocopy(&stream, 65536, Method::MsgZerocopy), Ok(true));
    assert_eq!(thresholds.should_zerocopy(&stream, 4096, Method::MsgZerocopy), Ok(false));
    let fd = stream.as_raw_fd();
    assert_eq!(thresholds.should_zerocopy(&fd, 8192, Method::MsgZerocopy), Ok(true));
    let answer = thresholds.lookup_socket(&stream, Method::MsgZerocopy).unwrap();
    assert_eq!(answer.scope(), Scope::Loopback);
    assert_eq!(
        thresholds.should_zerocopy(&stream, 65536, Method::UringSend),
        Err(Error::NoEntry)
    );
    assert!(thresholds.should_zerocopy_or(&stream, 65536, Method::UringSend, true));
    let unconnected = std::fs::File::open("/dev/null").unwrap();
    assert_eq!(
        thresholds.should_zerocopy(&unconnected, 1, Method::MsgZerocopy),
        Err(Error::NotASocket)
    );
}

#[test]
fn an_inconclusive_verdict_leaves_the_choice_to_the_caller() {
    let thresholds = segment();
    let answer = thresholds.lookup(ip("10.9.1.1"), Method::MsgZerocopy).unwrap();
    assert_eq!(answer.verdict(), Verdict::Inconclusive);
    assert_eq!(answer.should_zerocopy(1 << 20), None);
    let mut guard = Guard::for_peer(
        Some(&thresholds),
        ip("10.9.1.1"),
        Method::MsgZerocopy,
        true,
        None,
    )
    .unwrap();
    assert!(guard.has_answer());
    assert!(guard.should_zerocopy(1), "the fallback");
}

#[test]
fn a_guard_on_a_loopback_stream_follows_the_threshold_until_copies() {
    let thresholds = segment();
    let (stream, _server) = loopback_stream();
    let mut guard = Guard::new(Some(&thresholds), &stream, Method::MsgZerocopy, false, None).unwrap();
    assert!(guard.has_answer());
    assert!(guard.should_zerocopy(65536));
    assert!(!guard.should_zerocopy(4096), "below the loopback threshold");
    // The kernel copies loopback's zerocopy sends and says so.
    guard.completed(4, 4).unwrap();
    assert_eq!(guard.state(), GuardState::Off);
    assert!(!guard.should_zerocopy(65536));
    assert_eq!(guard.sends_until_retry(), zcal::RETRY_SENDS - 1);
    assert_eq!((guard.completions(), guard.copied(), guard.turned_off()), (4, 4, 1));
    assert!(matches!(guard.completed(1, 2), Err(Error::InvalidArgument(_))));
}

// The only test of this file that opens the process's report: the others'
// guards, in other threads, may count into it meanwhile, which is allowed.
#[test]
fn a_report_object_lives_from_open_to_close() {
    let path = format!("/dev/shm/zcal-report-{}", std::process::id());
    assert!(!std::path::Path::new(&path).exists());
    zcal::report::open("rust-test").unwrap();
    assert!(std::path::Path::new(&path).exists());
    assert!(matches!(zcal::report::open("again"), Err(Error::Os(16, _))));
    let thresholds = segment();
    let mut guard =
        Guard::for_peer(Some(&thresholds), ip("10.1.2.3"), Method::MsgZerocopy, false, None).unwrap();
    assert!(guard.should_zerocopy(65536));
    guard.completed(1, 0).unwrap();
    zcal::report::close();
    // This process opened a segment with a live heartbeat: the closed
    // object is left for its agent to count and remove. No agent reads
    // here, so the test removes it.
    let header = std::fs::read(&path).unwrap();
    let flags = u32::from_ne_bytes(header[84..88].try_into().unwrap());
    assert_eq!(flags & 1, 1, "CLOSED");
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(zcal::report::open("a/b"), Err(Error::InvalidArgument(_))));
    assert!(matches!(zcal::report::open("nul\0"), Err(Error::InvalidArgument(_))));
}
