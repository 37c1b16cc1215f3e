//! The forwarder's process out of descriptors: accepting fails (EMFILE)
//! and the forwarder goes on accepting once descriptors come free. A test
//! binary of its own, since the limit is the whole process's.

mod common;

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use cleanroom_model::forwarder::Limits;
use common::{exchange, forwarder, models_request, read_answer};

#[test]
fn the_forwarder_keeps_accepting_after_the_descriptor_limit_is_hit() {
    let f = forwarder(Limits::default(), Duration::ZERO);
    // The clients' sockets are made first: connecting them takes no
    // descriptor, so none comes free for the forwarder meanwhile.
    let (first, second) = (unconnected_socket(), unconnected_socket());
    let normal = descriptor_limit();
    let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    set_descriptor_limit(libc::rlimit { rlim_cur: open + 32, ..normal });
    let mut filler = Vec::new();
    loop {
        match File::open("/dev/null") {
            Ok(file) => filler.push(file),
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => break,
            Err(e) => panic!("{e}"),
        }
    }
    // A blocked accept(2) holds the descriptor it will return, so the
    // first connection may still be accepted; the accept after it fails.
    let mut first = connect(first, f.addr);
    first.write_all(models_request().as_bytes()).unwrap();
    let mut second = BufReader::new(connect(second, f.addr));
    second.get_mut().write_all(models_request().as_bytes()).unwrap();
    let waited = second.fill_buf().map(|b| b.len()).map_err(|e| e.kind());
    assert_eq!(waited, Err(ErrorKind::WouldBlock), "no answer while the forwarder has no descriptor");

    drop(filler);
    set_descriptor_limit(normal);
    second.get_ref().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let answer = read_answer(&mut second).expect("the waiting connection is served");
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(exchange(f.addr, &models_request()).status, 200, "and new ones");
}

fn unconnected_socket() -> OwnedFd {
    // SAFETY: socket(2) returns a new descriptor we then own, or -1.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
    // SAFETY: fd is a fresh descriptor of ours.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Connects `socket` to a loopback `addr`; reads give up after half a second.
fn connect(socket: OwnedFd, addr: SocketAddr) -> TcpStream {
    let SocketAddr::V4(v4) = addr else { panic!("{addr} is not IPv4") };
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: v4.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*v4.ip()).to_be() },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: connect(2) of our socket with a valid address of that length.
    let rc = unsafe { libc::connect(socket.as_raw_fd(), (&sin as *const libc::sockaddr_in).cast(), len) };
    assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
    let stream = TcpStream::from(socket);
    stream.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    stream
}

fn descriptor_limit() -> libc::rlimit {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit with a valid struct.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) }, 0);
    limit
}

fn set_descriptor_limit(limit: libc::rlimit) {
    // SAFETY: setrlimit with a valid struct.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
}
