//! A loopback HTTP proxy between Handoff and the real Letta server that records every request
//! and injects faults on the ones a rule matches: an error status, a stall that ends in a
//! dropped connection, or a dropped connection before or after the request reached Letta.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;

/// What to do to a matching request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this status without asking Letta.
    Status(u16),
    /// Hold the request this long, then drop the connection (Letta never sees it).
    Stall(Duration),
    /// Drop the connection without asking Letta.
    DropBefore,
    /// Forward to Letta, then drop the connection instead of answering.
    DropAfter,
}

/// Applies `fault` to the next `times` requests whose method is `method` and whose path
/// contains `path`.
#[derive(Debug, Clone)]
pub struct Rule {
    pub method: &'static str,
    pub path: &'static str,
    pub times: u32,
    pub fault: Fault,
}

/// One request as the proxy saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub body: String,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// When it arrived.
    pub at: Instant,
    /// The fault applied, if any.
    pub fault: Option<Fault>,
}

#[derive(Default)]
struct State {
    rules: Mutex<Vec<Rule>>,
    seen: Mutex<Vec<Seen>>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

/// Counts a request in flight until dropped.
struct InFlight<'a>(&'a State);

impl<'a> InFlight<'a> {
    fn new(state: &'a State) -> Self {
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.most_in_flight.fetch_max(now, Ordering::SeqCst);
        Self(state)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl State {
    fn fault_for(&self, method: &str, path: &str) -> Option<Fault> {
        let mut rules = self.rules.lock().unwrap();
        let rule = rules
            .iter_mut()
            .find(|r| r.times > 0 && r.method == method && path.contains(r.path))?;
        rule.times -= 1;
        Some(rule.fault)
    }
}

/// The running proxy; stops with its runtime when dropped.
pub struct Proxy {
    pub url: String,
    state: Arc<State>,
    _runtime: tokio::runtime::Runtime,
}

impl Proxy {
    /// A proxy to `upstream` (Letta's base URL) on a free loopback port.
    pub fn start(upstream: &str, rules: Vec<Rule>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let state = Arc::new(State {
            rules: Mutex::new(rules),
            ..State::default()
        });
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let upstream = upstream.trim_end_matches('/').to_owned();
        let client = handoff_letta::testing::http();
        let accept_state = state.clone();
        runtime.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = accept_state.clone();
                let upstream = upstream.clone();
                let client = client.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        handle(state.clone(), client.clone(), upstream.clone(), req)
                    });
                    // A service error closes the connection: that is the dropped-connection fault.
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            url,
            state,
            _runtime: runtime,
        }
    }

    /// The most requests that were in flight at once.
    pub fn most_in_flight(&self) -> usize {
        self.state.most_in_flight.load(Ordering::SeqCst)
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }
}

async fn handle(
    state: Arc<State>,
    client: reqwest::Client,
    upstream: String,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::io::Error> {
    let _counted = InFlight::new(&state);
    let method = req.method().as_str().to_owned();
    let path = req
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    let headers = req.headers().clone();
    let body = req
        .into_body()
        .collect()
        .await
        .map_err(std::io::Error::other)?
        .to_bytes();
    let fault = state.fault_for(&method, &path);
    state.seen.lock().unwrap().push(Seen {
        method: method.clone(),
        path: path.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        at: Instant::now(),
        fault,
    });
    let dropped = || std::io::Error::other("injected: connection dropped");
    match fault {
        Some(Fault::Status(code)) => {
            return Ok(Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(format!(
                    r#"{{"detail":"injected HTTP {code}"}}"#
                ))))
                .unwrap());
        }
        Some(Fault::Stall(d)) => {
            // The injected fault itself (a Letta that hangs for `d`), not a wait of the test.
            tokio::time::sleep(d).await;
            return Err(dropped());
        }
        Some(Fault::DropBefore) => return Err(dropped()),
        Some(Fault::DropAfter) | None => {}
    }
    let mut forward = client.request(
        reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
        format!("{upstream}{path}"),
    );
    for name in ["content-type", "authorization"] {
        if let Some(v) = headers.get(name) {
            forward = forward.header(name, v.as_bytes());
        }
    }
    let answer = forward
        .body(body)
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .map_err(std::io::Error::other)?;
    let status = answer.status().as_u16();
    let bytes = answer.bytes().await.map_err(std::io::Error::other)?;
    if fault == Some(Fault::DropAfter) {
        return Err(dropped());
    }
    Ok(Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(bytes))
        .unwrap())
}
