//! The judge against the scripted model playing the judge: a confident verdict, a "done" below
//! the confidence threshold (not done), three unparseable answers (unverified), and a JSON-mode
//! provider.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use handoff_completion::judge::{JUDGE_ATTEMPTS, JudgeInput, Judgement, judge};
use handoff_llm::{LlmClient, LlmConfig, Provider};
use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

fn verdict(done: bool, confidence: f64) -> Value {
    json!({
        "done": done, "confidence": confidence, "summary": "wrote a.txt",
        "remaining": if done { json!([]) } else { json!(["write b.txt"]) },
        "continuation_prompt": if done { "" } else { "Write b.txt, then check it exists." },
        "is_stuck": false, "is_progress_being_made": true, "reason": "from the diff",
        "evidence": [{"requirement": "a.txt exists", "met": true, "evidence": "a.txt in the diff"}]
    })
}

async fn model() -> ScriptedModel {
    let call = |v: Value| json!({"tool_calls": [{"name": "verdict", "arguments": v}]});
    let script = json!({
        "scenarios": [
            {"match": "TASK-CONFIDENT", "turns": [call(verdict(true, 0.95))]},
            {"match": "TASK-UNSURE", "turns": [call(verdict(true, 0.4))]},
            {"match": "TASK-GARBAGE", "turns": [{"text": "I think it is probably done!"}]}
        ],
        "default": {"text": "no scenario"},
        "untooled": {"text": verdict(false, 0.8).to_string()}
    });
    ScriptedModel::start(Script::from_json(&script.to_string()).unwrap(), None)
        .await
        .unwrap()
}

fn client(provider: Provider, model: &ScriptedModel) -> LlmClient {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let base = match provider {
        Provider::Anthropic | Provider::Gemini => model.base_url(),
        _ => model.openai_base_url(),
    };
    LlmClient::new(
        LlmConfig {
            base_url: Some(base),
            backoff: Duration::from_millis(5),
            ..LlmConfig::new(provider, "mock-model")
        },
        reqwest::Client::new(),
    )
}

fn input(task: &str) -> JudgeInput {
    JudgeInput {
        task: task.to_owned(),
        success_criteria: vec!["a.txt exists".to_owned()],
        cycle: (1, 5),
        ..JudgeInput::default()
    }
}

#[tokio::test]
async fn a_confident_done_is_done() {
    let model = model().await;
    let (judgement, usage, _) = judge(
        &client(Provider::Anthropic, &model),
        &input("TASK-CONFIDENT"),
        0.7,
    )
    .await;
    let Judgement::Verdict {
        verdict,
        low_confidence,
    } = judgement
    else {
        panic!("{judgement:?}")
    };
    assert!(verdict.done && !low_confidence);
    assert_eq!(verdict.evidence[0].requirement, "a.txt exists");
    assert!(usage.total() > 0);
    model.shutdown().await;
}

#[tokio::test]
async fn a_done_below_the_confidence_threshold_is_not_done() {
    let model = model().await;
    let (judgement, _, _) = judge(
        &client(Provider::Anthropic, &model),
        &input("TASK-UNSURE"),
        0.7,
    )
    .await;
    let Judgement::Verdict {
        verdict,
        low_confidence,
    } = judgement
    else {
        panic!("{judgement:?}")
    };
    assert!(!verdict.done && low_confidence);
    assert!(
        verdict.remaining[0].contains("40%"),
        "{:?}",
        verdict.remaining
    );
    model.shutdown().await;
}

#[tokio::test]
async fn unparseable_answers_three_times_are_unverified() {
    let model = model().await;
    let (judgement, _, _) = judge(
        &client(Provider::Anthropic, &model),
        &input("TASK-GARBAGE"),
        0.7,
    )
    .await;
    let Judgement::Unverified(reason) = judgement else {
        panic!("{judgement:?}")
    };
    assert!(reason.contains("no parseable verdict"), "{reason}");
    assert_eq!(model.requests().len(), JUDGE_ATTEMPTS as usize);
    model.shutdown().await;
}

#[tokio::test]
async fn json_mode_providers_give_the_same_verdict_shape() {
    let model = model().await;
    for provider in [
        Provider::Openai,
        Provider::OpenaiResponses,
        Provider::Gemini,
    ] {
        let (judgement, _, _) = judge(&client(provider, &model), &input("anything"), 0.7).await;
        let Judgement::Verdict { verdict, .. } = judgement else {
            panic!("{provider:?}: {judgement:?}")
        };
        assert!(!verdict.done, "{provider:?}");
        assert_eq!(verdict.remaining, ["write b.txt"]);
        assert_eq!(
            verdict.continuation_prompt,
            "Write b.txt, then check it exists."
        );
    }
    model.shutdown().await;
}
