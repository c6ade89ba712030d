//! Whether a task Handoff reports `completed` is really done — decided by Handoff, never by the
//! executor grading itself: deterministic checks first ([`checks`]), then an external judge's
//! strict verdict ([`judge`]), cycles with a stall counter and one re-plan ([`cycle`]), budgets
//! ([`budget`]), the stuck detector over the executor's event stream ([`stuck`]), and the task
//! ledger of manager mode ([`ledger`]). Everything here is pure logic plus the judge's LLM call;
//! the engine drives it.

pub mod budget;
pub mod checks;
pub mod cutoff;
pub mod cycle;
pub mod judge;
pub mod ledger;
pub mod outcome;
pub mod protected;
pub mod quote;
pub mod stuck;
pub mod test_files;
pub mod tests_run;
pub mod weakened;

pub use outcome::{CompletionOutcome, CompletionStatus};

/// A model's JSON answer without a Markdown code fence around it, if it had one.
pub(crate) fn unfenced(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .unwrap_or(trimmed)
        .trim()
}
