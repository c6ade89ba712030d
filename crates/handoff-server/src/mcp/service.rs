//! rmcp's HTTP service behind one `Arc`. axum clones a route's service for every request (the
//! `/mcp` middleware and the router each take a clone), and a clone of rmcp's service copies its
//! whole config, allowed hosts and origins included: callgrind counted ~10k instructions of a
//! 111k-instruction `ping` spent cloning and dropping it, though the requests answered before
//! rmcp ([`super::DirectAnswers`]) never use it. Behind an `Arc` a clone is a reference count.
//! Nothing here is durable; the service lives as long as the router.

use std::{
    convert::Infallible,
    sync::Arc,
    task::{Context, Poll},
};

use axum::{body::Body, extract::Request};
use bytes::Bytes;
use futures::future::BoxFuture;
use http_body_util::combinators::BoxBody;
use rmcp::transport::streamable_http_server::StreamableHttpService;

use super::{CappedSessions, HandoffMcp};

/// rmcp's Streamable HTTP service, shared: cloning it costs a reference count.
#[derive(Clone)]
pub(crate) struct SharedMcpService(Arc<StreamableHttpService<HandoffMcp, CappedSessions>>);

impl SharedMcpService {
    /// Shares `service`.
    pub(crate) fn new(service: StreamableHttpService<HandoffMcp, CappedSessions>) -> Self {
        Self(Arc::new(service))
    }
}

impl tower::Service<Request> for SharedMcpService {
    type Response = http::Response<BoxBody<Bytes, Infallible>>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let service = Arc::clone(&self.0);
        Box::pin(async move { Ok(service.handle(request).await) })
    }
}
