//! A tiny HTTP/1.1 server on 127.0.0.1 that answers every request as a closure says: stands in
//! for an internal service (an instance's metadata endpoint) or a hostile storage endpoint.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// What the server answers: status, content type, body (`None`: `len` bytes of spaces,
/// streamed, for answers too large to hold).
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    pub spaces: Option<u64>,
}

impl Reply {
    /// `status` with `body`.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            body: body.into(),
            spaces: None,
        }
    }
}

/// A running server; it stops with the test process.
pub struct FakeHttp {
    pub port: u16,
    /// Request lines received (`GET /path?query`).
    pub requests: Arc<Mutex<Vec<String>>>,
}

impl FakeHttp {
    /// Starts answering each request (method, path with query) with `answer`.
    pub fn start(answer: impl Fn(&str, &str) -> Reply + Send + Sync + 'static) -> FakeHttp {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let answer = Arc::new(answer);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let answer = answer.clone();
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().expect("clone socket"));
                    let mut line = String::new();
                    if reader.read_line(&mut line).is_err() {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        match reader.read_line(&mut h) {
                            Ok(0) | Err(_) => break,
                            Ok(_) if h == "\r\n" => break,
                            Ok(_) => {}
                        }
                    }
                    let mut parts = line.split_whitespace();
                    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                    seen.lock().unwrap().push(format!("{method} {path}"));
                    let r = answer(method, path);
                    let len = r.spaces.unwrap_or(r.body.len() as u64);
                    let mut out = conn;
                    let head = format!(
                        "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n",
                        r.status
                    );
                    if out.write_all(head.as_bytes()).is_err() || method == "HEAD" {
                        return;
                    }
                    match r.spaces {
                        None => {
                            let _ = out.write_all(&r.body);
                        }
                        Some(n) => {
                            let chunk = vec![b' '; 1 << 16];
                            let mut left = n;
                            while left > 0 {
                                let k = left.min(chunk.len() as u64) as usize;
                                if out.write_all(&chunk[..k]).is_err() {
                                    return;
                                }
                                left -= k as u64;
                            }
                        }
                    }
                });
            }
        });
        FakeHttp { port, requests }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}
