//! A QEMU Machine Protocol client, as much of it as taking a snapshot
//! needs: QEMU's JSON control socket, one object a line.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use serde_json::{json, Value};

/// A QEMU Machine Protocol connection: one JSON object a line.
pub struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Qmp {
    pub fn open(stream: UnixStream) -> std::io::Result<Qmp> {
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let writer = stream.try_clone()?;
        let mut qmp = Qmp { reader: BufReader::new(stream), writer };
        qmp.line()?; // the greeting
        qmp.command("qmp_capabilities", json!({}))?;
        Ok(qmp)
    }

    fn line(&mut self) -> std::io::Result<Value> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(std::io::Error::other("QEMU closed its QMP socket"));
        }
        serde_json::from_str(&line).map_err(std::io::Error::other)
    }

    /// Runs `execute` and returns its answer; events on the way are skipped.
    pub fn command(&mut self, execute: &str, arguments: Value) -> std::io::Result<Value> {
        let request = json!({ "execute": execute, "arguments": arguments });
        self.writer.write_all(format!("{request}\n").as_bytes())?;
        loop {
            let mut answer = self.line()?;
            if let Some(error) = answer.get("error") {
                return Err(std::io::Error::other(format!("QMP {execute}: {}", error["desc"])));
            }
            if let Some(value) = answer.get_mut("return") {
                return Ok(value.take());
            }
        }
    }
}
