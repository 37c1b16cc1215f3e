//! Ports the harness serves inside the machine (the model forwarder): the
//! agent listens on the guest's loopback and relays each connection over
//! the serial port, so they work with no network device at all.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cleanroom_env::vm::protocol::{Frame, Message};

use crate::serve::Out;

#[derive(Default, Clone)]
pub struct Relays {
    conns: Arc<Mutex<HashMap<u64, TcpStream>>>,
    next: Arc<AtomicU64>,
}

impl Relays {
    pub fn listen(&self, port: u16, out: Out) -> io::Result<()> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let relays = self.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let conn = relays.next.fetch_add(1, Ordering::Relaxed) + 1;
                let Ok(writer) = stream.try_clone() else { continue };
                relays.conns.lock().unwrap_or_else(|p| p.into_inner()).insert(conn, writer);
                out.send(Frame::new(Message::Accepted { conn, port }));
                let out = out.clone();
                std::thread::spawn(move || pump(stream, conn, out));
            }
        });
        Ok(())
    }

    /// Data from the harness's side of connection `conn`.
    pub fn deliver(&self, conn: u64, data: &[u8]) {
        let conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut stream) = conns.get(&conn) {
            let _ = stream.write_all(data);
        }
    }

    pub fn close(&self, conn: u64) {
        if let Some(stream) = self.conns.lock().unwrap_or_else(|p| p.into_inner()).remove(&conn) {
            let _ = stream.shutdown(Shutdown::Write);
        }
    }
}

/// What the guest side sends, to the harness, until it is done.
fn pump(mut stream: TcpStream, conn: u64, out: Out) {
    let mut buf = vec![0u8; 64 << 10];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.send(Frame::with_data(Message::Data { conn }, buf[..n].to_vec()));
    }
    out.send(Frame::new(Message::Close { conn }));
}
