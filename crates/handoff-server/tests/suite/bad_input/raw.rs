//! HTTP/1.1 by hand, for requests no client library sends: duplicate Host, NUL in a header,
//! conflicting lengths, oversized heads.

use std::net::SocketAddr;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use super::fixture::{Answer, DEADLINE};

/// Sends `request` on a fresh connection and reads the answer until the server closes it.
pub async fn exchange(addr: SocketAddr, request: &[u8]) -> Result<Answer, String> {
    let exchange = async {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let (mut reader, mut writer) = stream.into_split();
        // Read while writing: a server may answer (431, 413) before taking the whole request.
        let request = request.to_vec();
        let write = tokio::spawn(async move {
            let _ = writer.write_all(&request).await;
            writer
        });
        let mut bytes = Vec::new();
        let read = reader.read_to_end(&mut bytes).await;
        drop(write.await);
        if bytes.is_empty() {
            return Err(match read {
                Ok(_) => "connection closed without an answer".to_owned(),
                Err(e) => format!("connection failed without an answer: {e}"),
            });
        }
        parse(&bytes)
    };
    tokio::time::timeout(DEADLINE, exchange)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", DEADLINE.as_secs())))
}

/// The bytes of a POST to `/mcp` with `headers` and `body`, closing after the answer.
pub fn post_bytes(addr: SocketAddr, headers: &[(String, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("POST /mcp HTTP/1.1\r\nhost: {addr}\r\n").into_bytes();
    for (k, v) in headers {
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(body);
    out
}

/// Splits status, headers and body (plain or chunked).
fn parse(bytes: &[u8]) -> Result<Answer, String> {
    let split = find(bytes, b"\r\n\r\n").ok_or("answer without a complete head")?;
    let head = String::from_utf8_lossy(&bytes[..split]);
    let body = &bytes[split + 4..];
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("answer without a status line")?;
    let mut content_type = String::new();
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "content-type" {
            content_type = value.to_owned();
        }
        if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        }
    }
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_vec()
    };
    Ok(Answer::new(status, &content_type, &body))
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = find(body, b"\r\n") {
        let size = std::str::from_utf8(&body[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok());
        let Some(size) = size.filter(|s| *s > 0) else {
            break;
        };
        let start = end + 2;
        let stop = (start + size).min(body.len());
        out.extend_from_slice(&body[start..stop]);
        body = &body[(stop + 2).min(body.len())..];
    }
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
