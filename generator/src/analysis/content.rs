//! Phase C1: whether assistant content is written bare or inside markers.
//!
//! Compares a content-only turn with a tool-call turn and with a
//! reasoning-only turn: if the content text alone is what differs, content is
//! plain; otherwise the markers right around it are the content markers.

use serde_json::json;

use super::pattern::p::*;
use super::probe::*;
use crate::spec::{ContentMode, ContentSpec, ReasoningMode, ReasoningSpec};

pub fn analyze(r: &mut Renderer<'_>, reasoning: &ReasoningSpec) -> ContentSpec {
    let mut spec = ContentSpec::default();
    let content_only = Scenario::with_tools(convo(assistant_text()));
    let with_tools = Scenario::with_tools(convo(json!({
        "role": "assistant", "content": "",
        "tool_calls": [tool_call("test_func", json!({"arg1": "value1"}), CALL_ID_001)]
    })));
    let with_reasoning = Scenario::with_tools(convo(json!({
        "role": "assistant", "content": "", "reasoning_content": THINKING_CONTENT
    })));
    let tools_cmp = r.compare("C1 content vs tools", &content_only, &with_tools);
    let reasoning_cmp = r.compare("C1 content vs reasoning", &content_only, &with_reasoning);
    let (Some(tools_cmp), Some(reasoning_cmp)) = (tools_cmp, reasoning_cmp) else { return spec };
    let diff_tools = &tools_cmp.diff;
    let diff_reasoning = &reasoning_cmp.diff;

    let mut plain = false;
    if diff_tools.left.trim() == ASSISTANT_MSG {
        // The content text is all that differs, possibly with a stray end-of-turn marker.
        let only_text = seq(vec![space(), lit(diff_reasoning.left.clone()), space(), opt(marker()), space(), end()]);
        if only_text.match_start(&diff_reasoning.left).matched {
            plain = true;
        } else if reasoning.mode != ReasoningMode::None && !reasoning.end.is_empty() {
            let after_reasoning = seq(vec![lit(reasoning.end.clone()), space(), lit(ASSISTANT_MSG)]);
            plain = after_reasoning.match_anywhere(&diff_reasoning.left).matched;
        }
    }
    if !plain {
        let mut rdiff = diff_reasoning.left.as_str();
        if !reasoning.end.is_empty() {
            if let Some(pos) = rdiff.find(reasoning.end.as_str()) {
                rdiff = &rdiff[pos + reasoning.end.len()..];
            }
        }
        // Take the longer (more informative) of the two diffs.
        let pure = if rdiff.len() > diff_tools.left.len() { rdiff } else { diff_tools.left.as_str() };
        let wrapped = seq(vec![
            tag("pre", seq(vec![marker(), space()])),
            lit(ASSISTANT_MSG),
            space(),
            tag("post", seq(vec![marker(), space()])),
            rest(),
        ]);
        let found = wrapped.match_anywhere(pure);
        spec.start = found.get("pre").to_string();
        spec.end = found.get("post").to_string();
    }
    if !spec.start.is_empty() || !spec.end.is_empty() {
        spec.mode = ContentMode::AlwaysWrapped;
    }
    spec
}
