//! Phase R: how the template writes reasoning.
//!
//! - R1 compares an assistant turn with and without `reasoning_content`.
//! - R2 compares the generation prompt with `enable_thinking` false and true.
//! - R3 compares reasoning next to content with reasoning next to tool calls
//!   (templates that only keep reasoning on tool-call turns).

use serde_json::{json, Value};

use super::pattern::p::*;
use super::probe::*;
use crate::diff::non_blank_segments;
use crate::diff::SegmentKind;
use crate::spec::{ReasoningMode, ReasoningSpec};

pub fn analyze(r: &mut Renderer<'_>, supports_tool_calls: bool) -> ReasoningSpec {
    let mut spec = ReasoningSpec::default();
    reasoning_presence(r, &mut spec);
    thinking_enabled(r, &mut spec);
    if supports_tool_calls {
        reasoning_scope(r, &mut spec);
    }
    spec
}

/// R1: where does `reasoning_content` land in a past assistant turn?
fn reasoning_presence(r: &mut Renderer<'_>, spec: &mut ReasoningSpec) {
    let without = Scenario { messages: convo(assistant_text()), tools: None, add_generation_prompt: false, enable_thinking: true };
    // Reasoning is given as `reasoning_content`, or (Mistral 3, Magistral)
    // as a typed content block `{"type": "thinking", "thinking": ...}` that
    // the template renders between its own markers.
    let as_field = json!({"role": "assistant", "content": ASSISTANT_MSG, "reasoning_content": THINKING_CONTENT});
    let as_block = json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": THINKING_CONTENT},
        {"type": "text", "text": ASSISTANT_MSG},
    ]});
    let found_in = |r: &mut Renderer<'_>, turn: Value| {
        let with = Scenario { messages: convo(turn), ..without.clone() };
        r.compare("R1 reasoning presence", &without, &with).filter(|cmp| cmp.diff.right.contains(THINKING_CONTENT))
    };
    // The block form is a fallback: a template that takes no typed content
    // blocks failing on it is not a render failure worth reporting.
    let block_renders = |r: &mut Renderer<'_>, turn: &Value| r.try_render(&Scenario { messages: convo(turn.clone()), ..without.clone() }).is_ok();
    let Some(cmp) = found_in(r, as_field).or_else(|| block_renders(r, &as_block).then(|| found_in(r, as_block)).flatten()) else { return };
    let wrapped = seq(vec![
        tag("pre", seq(vec![marker(), space()])),
        lit(THINKING_CONTENT),
        tag("post", seq(vec![space(), marker(), space()])),
        rest(),
    ]);
    let delimited = seq(vec![lit(THINKING_CONTENT), space(), opt(seq(vec![tag("post", seq(vec![marker(), space()])), rest()]))]);
    let mut found = wrapped.match_anywhere(&cmp.output_b);
    if !found.matched {
        found = delimited.match_anywhere(&cmp.output_b);
    }
    if found.matched {
        if !found.get("pre").is_empty() && !found.get("post").is_empty() {
            spec.mode = ReasoningMode::TagBased;
            spec.start = found.get("pre").to_string();
            spec.end = found.get("post").to_string();
        } else if !found.get("post").is_empty() {
            spec.mode = ReasoningMode::TagBased;
            spec.end = found.get("post").to_string();
        }
    }
}

/// R2: does `enable_thinking` add (or, reversed, close) a reasoning block in
/// the generation prompt?
fn thinking_enabled(r: &mut Renderer<'_>, spec: &mut ReasoningSpec) {
    let off = Scenario { messages: json!([user_msg()]), tools: None, add_generation_prompt: true, enable_thinking: false };
    let on = Scenario { enable_thinking: true, ..off.clone() };
    let Some(cmp) = r.compare("R2 enable_thinking", &off, &on) else { return };
    let d = &cmp.diff;
    let left = d.left.trim();
    let right = d.right.trim();
    if left.is_empty() && !d.right.is_empty() {
        // Thinking on appends an opening marker.
        if !right.is_empty() && cmp.output_b.ends_with(right) && spec.start.is_empty() {
            spec.start = d.right.clone();
            spec.mode = ReasoningMode::TagBased;
        }
    } else if right.is_empty() && !d.left.is_empty() {
        // Thinking off appends a closing marker (often an empty block).
        if !left.is_empty() && cmp.output_a.ends_with(left) && spec.end.is_empty() {
            let segs = non_blank_segments(&cmp.output_a);
            let n = segs.len();
            if n >= 2 && segs[n - 1].text == left && segs[n - 2].kind == SegmentKind::Marker {
                spec.start = segs[n - 2].text.to_string();
            }
            spec.end = d.left.clone();
            spec.mode = ReasoningMode::TagBased;
        }
    } else if !left.is_empty() && !right.is_empty() {
        // Both sides changed (e.g. a system prompt that mentions thinking):
        // anchor on the tail of one render inside the other and look at what
        // follows it.
        const ANCHOR: usize = 64;
        for (base, extended) in [(&cmp.output_b, &cmp.output_a), (&cmp.output_a, &cmp.output_b)] {
            let mut cut = base.len().saturating_sub(ANCHOR);
            while !base.is_char_boundary(cut) {
                cut += 1;
            }
            let anchor = &base[cut..];
            let Some(pos) = extended.rfind(anchor) else { continue };
            if pos + anchor.len() >= extended.len() {
                continue;
            }
            let extra = extended[pos + anchor.len()..].trim();
            if extra.is_empty() {
                continue;
            }
            let segs = non_blank_segments(extra);
            if segs.len() == 2 && segs.iter().all(|s| s.kind == SegmentKind::Marker) {
                if spec.start.is_empty() {
                    spec.start = segs[0].text.to_string();
                }
                if spec.end.is_empty() {
                    spec.end = segs[1].text.to_string();
                }
                spec.mode = ReasoningMode::TagBased;
                break;
            }
        }
    }
    if spec.mode == ReasoningMode::None && spec.start.is_empty() && !spec.end.is_empty() {
        spec.mode = ReasoningMode::TagBased;
    }
}

/// R3: reasoning that only survives on tool-call turns.
fn reasoning_scope(r: &mut Renderer<'_>, spec: &mut ReasoningSpec) {
    let with_content = Scenario::with_tools(convo(json!({
        "role": "assistant", "content": ASSISTANT_MSG, "reasoning_content": THINKING_CONTENT
    })));
    let with_calls = |content: Value| {
        Scenario::with_tools(convo(json!({
            "role": "assistant", "content": content, "reasoning_content": THINKING_CONTENT,
            "tool_calls": [tool_call(FUN_FIRST, json!({ARG_FIRST: "VVVV", ARG_SECOND: "XXXX"}), CALL_ID_001)]
        })))
    };
    // Some templates cannot print a null content next to tool calls; servers
    // pass "" for them, and so do we when null fails.
    let null_content = with_calls(Value::Null);
    let cmp = match r.try_render(&null_content) {
        Ok(_) => r.compare("R3 reasoning scope", &with_content, &null_content),
        Err(_) => r.compare("R3 reasoning scope", &with_content, &with_calls(json!(""))),
    };
    let Some(cmp) = cmp else { return };
    let in_a = cmp.output_a.contains(THINKING_CONTENT);
    let in_b = cmp.output_b.contains(THINKING_CONTENT);
    if in_a || !in_b {
        return;
    }
    spec.mode = ReasoningMode::ToolsOnly;
    let wrapped = seq(vec![
        tag("pre", seq(vec![marker(), space()])),
        lit(THINKING_CONTENT),
        space(),
        tag("post", seq(vec![marker(), space()])),
    ]);
    let found = wrapped.match_anywhere(&cmp.output_b);
    if found.matched {
        spec.start = found.get("pre").to_string();
        spec.end = found.get("post").to_string();
        return;
    }
    let delimited = seq(vec![lit(THINKING_CONTENT), space(), opt(tag("post", seq(vec![marker(), space()])))]);
    let found = delimited.match_anywhere(&cmp.output_b);
    if found.matched {
        spec.end = found.get("post").to_string();
    } else {
        spec.mode = ReasoningMode::None;
    }
}
