use futures::future::BoxFuture;
use handoff_tools::ProgressReporter;
use rmcp::{
    Peer, RoleServer,
    model::{ProgressNotificationParam, ProgressToken},
};

/// Sends a call's progress as `notifications/progress` with the caller's token.
pub(crate) struct PeerProgress {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) token: ProgressToken,
}

impl ProgressReporter for PeerProgress {
    fn report(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut param = ProgressNotificationParam::new(self.token.clone(), progress);
            param.total = total;
            param.message = message;
            // A client that went away cannot be told; the call itself goes on.
            if let Err(error) = self.peer.notify_progress(param).await {
                tracing::debug!(%error, "progress notification not delivered");
            }
        })
    }
}
