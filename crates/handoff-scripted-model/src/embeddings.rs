//! OpenAI Embeddings (`POST /v1/embeddings`), as the official OpenAI SDKs call it (Letta
//! embeds archival memory and passages through it). Vectors are deterministic: seeded by a
//! hash of each input, unit length, of the model's native dimension unless `dimensions`
//! asks for fewer (truncated, then normalized again, as OpenAI does). Not scripted.

use data_encoding::BASE64;
use serde_json::{Value, json};

use crate::script::ErrorReply;

/// Native dimension of models not named below (the same as `text-embedding-3-small`).
const DEFAULT_DIMENSION: usize = 1536;

/// Why an embeddings request is rejected (rendered as OpenAI's 400 error body).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum EmbeddingError {
    /// `input` is missing, empty, or not a string / token array / array of either.
    #[error("'$.input' is invalid. Please check the API reference.")]
    Input,
    /// `encoding_format` is neither `float` nor `base64`.
    #[error(
        "Invalid value for 'encoding_format': {0:?}. Supported values are: 'float' and 'base64'."
    )]
    EncodingFormat(String),
    /// `dimensions` is not a whole number in `1..=native`, or the model has a fixed size.
    #[error("Invalid value for 'dimensions' for model {model}: {given}.")]
    Dimensions {
        /// The requested model.
        model: String,
        /// The offending value, as sent.
        given: String,
    },
}

impl EmbeddingError {
    /// The error reply OpenAI sends for it.
    pub(crate) fn reply(&self) -> ErrorReply {
        ErrorReply {
            status: 400,
            kind: "invalid_request_error".into(),
            message: self.to_string(),
        }
    }
}

/// How the vectors go on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// A JSON array of numbers (the API's default).
    Float,
    /// Base64 of little-endian `f32`s (what the OpenAI SDKs ask for by default).
    Base64,
}

/// A parsed request.
#[derive(Debug, Clone, PartialEq)]
struct Request {
    model: String,
    /// One hashing key per input, in order.
    inputs: Vec<String>,
    /// Estimated prompt tokens.
    tokens: u64,
    dimension: usize,
    encoding: Encoding,
}

/// The response body for an embeddings request, or why it is invalid.
pub(crate) fn respond(body: &Value) -> Result<Value, EmbeddingError> {
    let request = parse(body)?;
    let data: Vec<Value> = request
        .inputs
        .iter()
        .enumerate()
        .map(|(index, input)| {
            let vector = vector(input, request.dimension);
            let embedding = match request.encoding {
                Encoding::Float => json!(vector),
                Encoding::Base64 => json!(base64(&vector)),
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    Ok(json!({
        "object": "list",
        "data": data,
        "model": request.model,
        "usage": {"prompt_tokens": request.tokens, "total_tokens": request.tokens},
    }))
}

fn parse(body: &Value) -> Result<Request, EmbeddingError> {
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("text-embedding-3-small")
        .to_string();
    let (inputs, tokens) = inputs(body.get("input").unwrap_or(&Value::Null))?;
    let encoding = match body.get("encoding_format") {
        None | Some(Value::Null) => Encoding::Float,
        Some(Value::String(s)) if s == "float" => Encoding::Float,
        Some(Value::String(s)) if s == "base64" => Encoding::Base64,
        Some(other) => return Err(EmbeddingError::EncodingFormat(other.to_string())),
    };
    let native = native_dimension(&model);
    let dimension = match body.get("dimensions") {
        None | Some(Value::Null) => native,
        Some(given) => given
            .as_u64()
            .and_then(|d| usize::try_from(d).ok())
            .filter(|d| (1..=native).contains(d) && model != "text-embedding-ada-002")
            .ok_or_else(|| EmbeddingError::Dimensions {
                model: model.clone(),
                given: given.to_string(),
            })?,
    };
    Ok(Request {
        model,
        inputs,
        tokens,
        dimension,
        encoding,
    })
}

/// The inputs as hashing keys, and their estimated token count. `input` is a string, an array
/// of strings, an array of token ids, or an array of token-id arrays; none may be empty.
fn inputs(input: &Value) -> Result<(Vec<String>, u64), EmbeddingError> {
    let one = |item: &Value| -> Result<(String, u64), EmbeddingError> {
        match item {
            Value::String(s) if !s.is_empty() => Ok((format!("text:{s}"), text_tokens(s))),
            Value::Array(ids) if !ids.is_empty() && ids.iter().all(Value::is_u64) => {
                let count = u64::try_from(ids.len()).unwrap_or(u64::MAX);
                Ok((format!("tokens:{}", Value::Array(ids.clone())), count))
            }
            _ => Err(EmbeddingError::Input),
        }
    };
    let items: Vec<(String, u64)> = match input {
        Value::Array(items) if items.is_empty() => return Err(EmbeddingError::Input),
        // A flat array of integers is one tokenized input.
        Value::Array(items) if items.iter().all(Value::is_u64) => vec![one(input)?],
        Value::Array(items) => items.iter().map(one).collect::<Result<_, _>>()?,
        single => vec![one(single)?],
    };
    let tokens = items.iter().map(|(_, t)| *t).sum();
    Ok((items.into_iter().map(|(key, _)| key).collect(), tokens))
}

/// The size OpenAI's model returns when `dimensions` is not given.
fn native_dimension(model: &str) -> usize {
    match model {
        "text-embedding-3-large" => 3072,
        _ => DEFAULT_DIMENSION,
    }
}

/// Roughly four characters per token, at least one.
fn text_tokens(text: &str) -> u64 {
    u64::try_from(text.len().div_ceil(4))
        .unwrap_or(u64::MAX)
        .max(1)
}

/// A unit vector of `dimension` components seeded by `key`. The same key always gives the
/// same vector; a shorter one is the longer one truncated and renormalized.
fn vector(key: &str, dimension: usize) -> Vec<f32> {
    let mut state = fnv1a(key.as_bytes());
    let raw: Vec<f64> = (0..dimension)
        .map(|_| {
            state = splitmix64(state);
            // The top 53 bits as a float in [-1, 1).
            let unit = (state >> 11) as f64 / (1_u64 << 53) as f64;
            unit * 2.0 - 1.0
        })
        .collect();
    let norm = raw.iter().map(|x| x * x).sum::<f64>().sqrt();
    raw.iter()
        .map(|x| if norm > 0.0 { (x / norm) as f32 } else { 0.0 })
        .collect()
}

/// Base64 of the components as little-endian `f32`s.
fn base64(vector: &[f32]) -> String {
    let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    BASE64.encode(&bytes)
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// One step of SplitMix64: a well-mixed 64-bit value from the previous one.
fn splitmix64(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn floats(embedding: &Value) -> Vec<f32> {
        embedding
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect()
    }

    fn norm(v: &[f32]) -> f32 {
        v.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    #[test]
    fn floats_by_default_with_the_models_dimension_and_openai_shape() {
        let body =
            respond(&json!({"model": "text-embedding-3-small", "input": ["a", "b"]})).unwrap();
        assert_eq!(body["object"], "list");
        assert_eq!(body["model"], "text-embedding-3-small");
        assert_eq!(
            body["usage"],
            json!({"prompt_tokens": 2, "total_tokens": 2})
        );
        let data = body["data"].as_array().unwrap();
        assert_eq!(data.len(), 2);
        for (i, item) in data.iter().enumerate() {
            assert_eq!(item["object"], "embedding");
            assert_eq!(item["index"], i);
            let v = floats(&item["embedding"]);
            assert_eq!(v.len(), 1536);
            assert!((norm(&v) - 1.0).abs() < 1e-4);
        }
        assert_ne!(data[0]["embedding"], data[1]["embedding"]);
        let large = respond(&json!({"model": "text-embedding-3-large", "input": "a"})).unwrap();
        assert_eq!(
            large["data"][0]["embedding"].as_array().unwrap().len(),
            3072
        );
    }

    #[test]
    fn deterministic_and_base64_is_the_same_vector() {
        let request = json!({"model": "text-embedding-3-small", "input": "hello"});
        let first = respond(&request).unwrap();
        assert_eq!(first, respond(&request).unwrap());
        let mut b64 = request.clone();
        b64["encoding_format"] = json!("base64");
        let encoded = respond(&b64).unwrap();
        let bytes = BASE64
            .decode(encoded["data"][0]["embedding"].as_str().unwrap().as_bytes())
            .unwrap();
        let decoded: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(decoded, floats(&first["data"][0]["embedding"]));
    }

    #[test]
    fn dimensions_truncate_and_renormalize() {
        let full = respond(&json!({"input": "x"})).unwrap();
        let short = respond(&json!({"input": "x", "dimensions": 8})).unwrap();
        let full = floats(&full["data"][0]["embedding"]);
        let short = floats(&short["data"][0]["embedding"]);
        assert_eq!(short.len(), 8);
        assert!((norm(&short) - 1.0).abs() < 1e-4);
        let scale = short[0] / full[0];
        for (s, f) in short.iter().zip(&full) {
            assert!((s - f * scale).abs() < 1e-4);
        }
    }

    #[test]
    fn token_arrays_are_inputs_too() {
        let one = respond(&json!({"input": [1, 2, 3]})).unwrap();
        assert_eq!(one["data"].as_array().unwrap().len(), 1);
        assert_eq!(one["usage"]["prompt_tokens"], 3);
        let two = respond(&json!({"input": [[1, 2], [3]]})).unwrap();
        assert_eq!(two["data"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn rejects_what_openai_rejects() {
        for bad in [
            json!({}),
            json!({"input": ""}),
            json!({"input": []}),
            json!({"input": ["ok", ""]}),
            json!({"input": [{"text": "x"}]}),
        ] {
            assert_eq!(respond(&bad), Err(EmbeddingError::Input), "{bad}");
        }
        assert!(matches!(
            respond(&json!({"input": "x", "encoding_format": "int8"})),
            Err(EmbeddingError::EncodingFormat(_))
        ));
        for dimensions in [json!(0), json!(1537), json!("8")] {
            assert!(matches!(
                respond(&json!({"input": "x", "dimensions": dimensions})),
                Err(EmbeddingError::Dimensions { .. })
            ));
        }
        let ada = json!({"model": "text-embedding-ada-002", "input": "x", "dimensions": 8});
        assert!(respond(&ada).is_err());
        assert_eq!(EmbeddingError::Input.reply().status, 400);
    }
}
