//! Raw TCP clients for what an HTTP library will not send: partial requests, idle sockets,
//! duplicate headers.

use std::time::{Duration, Instant};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// How long a test waits for the server to act before it fails (generous for a loaded machine).
pub const PATIENCE: Duration = Duration::from_secs(20);

/// `host:port` of a test server's `/mcp` URL.
pub fn addr(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned()
}

/// An open connection to the server.
pub async fn connect(url: &str) -> TcpStream {
    TcpStream::connect(addr(url)).await.unwrap()
}

/// Reads until the server closes the connection (EOF or reset); panics if it stays open past
/// [`PATIENCE`]. Returns what was read and when the close was seen.
pub async fn read_until_closed(stream: &mut TcpStream) -> (Vec<u8>, Instant) {
    let mut seen = Vec::new();
    let until = Instant::now() + PATIENCE;
    let mut buf = [0u8; 8192];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Err(_) => panic!(
                "the server kept the connection open for {PATIENCE:?}; read so far: {:?}",
                String::from_utf8_lossy(&seen)
            ),
            Ok(Ok(0) | Err(_)) => return (seen, Instant::now()),
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

/// Reads one response with a `content-length` body, leaving the connection open.
pub async fn read_response(stream: &mut TcpStream) -> (u16, String) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if seen.len() >= end + 4 + length {
                let body = String::from_utf8_lossy(&seen[end + 4..end + 4 + length]).into_owned();
                return (status_of(&seen), body);
            }
        }
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
            .await
            .expect("no response in time")
            .unwrap();
        assert!(
            n > 0,
            "closed mid-response: {:?}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
}

/// The status code of a raw response.
pub fn status_of(response: &[u8]) -> u16 {
    let text = String::from_utf8_lossy(response);
    text.split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"))
}

/// Sends `request` (a complete HTTP/1.1 request asking to close) and returns the status and
/// body of the answer.
pub async fn exchange(url: &str, request: &str) -> (u16, String) {
    let mut stream = connect(url).await;
    stream.write_all(request.as_bytes()).await.unwrap();
    let (response, _) = read_until_closed(&mut stream).await;
    let text = String::from_utf8_lossy(&response).into_owned();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status_of(&response), body)
}

/// A `POST /mcp` with a JSON body and the given extra header lines (`name: value`).
pub fn post(url: &str, headers: &[&str], body: &str) -> String {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nconnection: close\r\n\
         content-length: {}\r\n",
        addr(url),
        body.len()
    );
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    request.push_str(body);
    request
}
