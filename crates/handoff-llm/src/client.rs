//! Sending a request: one timeout per attempt, retries with exponential back-off and jitter on
//! 408/429/5xx and connection failures, `Retry-After` honoured, other 4xx returned at once.

use std::time::Duration;

use serde_json::Value;

use crate::{
    ChatRequest, ChatResponse, LlmConfig, LlmError,
    wire::{self, HttpCall},
};

/// Longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A client for one provider and model; cheap to clone.
#[derive(Debug, Clone)]
pub struct LlmClient {
    config: LlmConfig,
    http: reqwest::Client,
}

enum Failure {
    Retry {
        message: String,
        retry_after: Option<Duration>,
    },
    Fatal(LlmError),
}

impl LlmClient {
    /// A client sending through `http` (which carries the process's TLS setup).
    pub fn new(config: LlmConfig, http: reqwest::Client) -> Self {
        Self { config, http }
    }

    /// A client with its own HTTP connection pool (TLS through rustls with the ring provider).
    pub fn from_config(config: LlmConfig) -> Result<Self, LlmError> {
        // Installing twice is harmless: the first provider stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| LlmError::Config(e.to_string()))?;
        Ok(Self::new(config, http))
    }

    /// The settings.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// Sends `request`, retrying what is worth retrying.
    pub async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let provider = self.config.provider.as_str();
        let base = self
            .config
            .base_url()
            .ok_or_else(|| LlmError::Config(format!("provider {provider} needs a base_url")))?;
        let call = wire::build(&self.config, &base, request);
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.send(&call).await {
                Ok(body) => {
                    let parsed = wire::parse(self.config.provider, &body)
                        .map_err(|message| LlmError::Decode { provider, message })?;
                    let cost_usd = self.config.pricing.map(|p| {
                        (parsed.usage.input_tokens as f64 * p.input_per_mtok
                            + parsed.usage.output_tokens as f64 * p.output_per_mtok)
                            / 1_000_000.0
                    });
                    return Ok(ChatResponse {
                        text: parsed.text,
                        usage: parsed.usage,
                        cost_usd,
                        stop_reason: parsed.stop_reason,
                        attempts: attempt,
                    });
                }
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Retry {
                    message,
                    retry_after,
                }) => {
                    if attempt > self.config.max_retries {
                        return Err(LlmError::Exhausted {
                            provider,
                            attempts: attempt,
                            last: message,
                        });
                    }
                    let wait = retry_after
                        .unwrap_or_else(|| backoff(self.config.backoff, attempt))
                        .min(MAX_BACKOFF);
                    tracing::debug!(provider, attempt, ?wait, %message, "retrying the LLM call");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn send(&self, call: &HttpCall) -> Result<Value, Failure> {
        let provider = self.config.provider.as_str();
        let mut request = self
            .http
            .post(&call.url)
            .timeout(self.config.timeout)
            .header("content-type", "application/json")
            .body(call.body.to_string());
        for (name, value) in &call.headers {
            request = request.header(*name, value);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_timeout() => {
                return Err(Failure::Retry {
                    message: LlmError::Timeout(self.config.timeout).to_string(),
                    retry_after: None,
                });
            }
            Err(e) => {
                return Err(Failure::Retry {
                    message: format!("connection failed: {e}"),
                    retry_after: None,
                });
            }
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = match response.text().await {
            Ok(text) => text,
            Err(e) => {
                return Err(Failure::Retry {
                    message: format!("the answer was cut off: {e}"),
                    retry_after: None,
                });
            }
        };
        match status {
            200..=299 => serde_json::from_str(&text).map_err(|e| {
                Failure::Fatal(LlmError::Decode {
                    provider,
                    message: format!("not JSON: {e}"),
                })
            }),
            408 | 429 | 500..=599 => Err(Failure::Retry {
                message: format!("HTTP {status}: {}", wire::error_message(&text)),
                retry_after,
            }),
            _ => Err(Failure::Fatal(LlmError::Refused {
                provider,
                status,
                message: wire::error_message(&text),
            })),
        }
    }
}

/// `first × 2^(attempt-1)`, scaled by a random factor in [0.5, 1) so clients spread out.
fn backoff(first: Duration, attempt: u32) -> Duration {
    let exp = first.saturating_mul(1u32 << (attempt.saturating_sub(1)).min(16));
    let mut byte = [0u8; 1];
    let jitter = if getrandom::fill(&mut byte).is_ok() {
        0.5 + f64::from(byte[0]) / 512.0
    } else {
        0.75
    };
    exp.mul_f64(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter() {
        let first = Duration::from_millis(100);
        for attempt in 1..=4 {
            let full = first * (1 << (attempt - 1));
            let wait = backoff(first, attempt);
            assert!(wait >= full / 2 && wait < full, "{attempt}: {wait:?}");
        }
    }
}
