//! An agent opening thousands of connections to its forwarder and holding
//! them: the harness's threads stay bounded and the forwarder still serves.
//! A test binary of its own, so that its thread count is this test's.

mod common;

use std::net::TcpStream;
use std::time::Duration;

use cleanroom_model::forwarder::Limits;
use common::{chat_request, forwarder, served_within, thread_count};

const CONNECTIONS: usize = 2000;

#[test]
fn thousands_of_idle_connections_leave_the_threads_bounded_and_a_request_served_once_they_time_out() {
    allow_descriptors(CONNECTIONS as u64 * 2 + 256);
    let idle = Duration::from_secs(2);
    let f = forwarder(Limits { idle_timeout: idle, ..Limits::default() }, Duration::ZERO);
    let mut most = thread_count();
    let mut held = Vec::with_capacity(CONNECTIONS);
    for i in 0..CONNECTIONS {
        held.push(TcpStream::connect(f.addr).unwrap());
        if i % 50 == 0 {
            most = most.max(thread_count());
        }
    }
    most = most.max(thread_count());
    assert!(most < 100, "{most} threads for {CONNECTIONS} connections");
    // Still holding every connection: the forwarder's slots come free as
    // its idle ones time out.
    let served = served_within(f.addr, &chat_request(), idle + Duration::from_secs(20));
    assert_eq!(served.status, 200, "{served:?}");
    assert!(served.body.contains(common::ANSWER), "{served:?}");
    assert!(thread_count() < 100);
    drop(held);
}

/// Raises this process's soft descriptor limit to `n` where it is lower.
fn allow_descriptors(n: u64) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit with a valid struct.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        assert!(limit.rlim_max >= n, "the hard descriptor limit {} is below {n}", limit.rlim_max);
        limit.rlim_cur = limit.rlim_cur.max(n);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
}
