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

/// Phase C2: the markup that ends an assistant turn (`<|im_end|>`,
/// `<|eot_id|>`, `<｜end▁of▁sentence｜>`...), after plain content and after
/// tool calls, as the template writes it in a history turn.
///
/// A server that does not strip stop tokens passes it on in the output; it
/// ends the reply and is never content. The turn is rendered last and with
/// a turn after it (some templates write the end only between turns); the
/// markers right after it count, up to text or a marker that opens a turn
/// (one the generation prompt writes). What the template writes through
/// `{{ eos_token }}` is found only when the template was given its
/// tokenizer's tokens (`ChatTemplate::with_special_tokens`); without them
/// the probes render it empty.
///
/// ```text
/// "…END_A<|im_end|>\n<|im_start|>user\n…"  →  ["<|im_end|>"]
/// ```
pub fn end_of_turn(r: &mut Renderer<'_>, spec: &crate::spec::FormatSpec) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut known = known_markers(spec);
    let prompt = spec.generation_prompt.thinking.as_str();
    // The content's end marker ends the reply where the reply starts inside
    // the content wrapper (the generation prompt opened it: Command R+'s
    // `<|CHATBOT_TOKEN|>`); where the model opens the wrapper itself, the
    // wrapper reads its end and a stray one is text.
    let content_end = spec.content.end.trim();
    let opened_by_prompt = !spec.content.start.trim().is_empty() && prompt.contains(spec.content.start.trim());
    let content_end = if opened_by_prompt {
        content_end
    } else {
        if !content_end.is_empty() {
            known.push(content_end.to_string());
        }
        ""
    };
    let mut take = |tail: &str| {
        let mut found = turn_end_markers(tail, &known, content_end, prompt);
        // Whitespace the template writes right before the marker (Apriel's
        // `\n<|end|>`) is part of the turn's end, not of the reply.
        let lead = &tail[..tail.len() - tail.trim_start().len()];
        if let Some(first) = found.first_mut().filter(|m| !lead.is_empty() && tail[lead.len()..].starts_with(m.as_str())) {
            *first = format!("{lead}{first}");
        }
        let any = !found.is_empty();
        for m in found {
            if !out.contains(&m) {
                out.push(m);
            }
        }
        any
    };
    let next_user = json!({"role": "user", "content": "U_NEXT_USER"});
    let content_turn = assistant_text();
    for messages in [convo(content_turn.clone()), json!([user_msg(), content_turn, next_user.clone()])] {
        if let Some(text) = r.render("C2 end of turn: content", &Scenario::with_tools(messages)) {
            if let Some(pos) = text.rfind(ASSISTANT_MSG) {
                take(&text[pos + ASSISTANT_MSG.len()..]);
            }
        }
    }
    if spec.capabilities.supports_tool_calls {
        let turn = assistant_calls(vec![first_call()]);
        let reply = json!({"role": "tool", "content": "Tool response", "tool_call_id": CALL_ID_001});
        // The call turn rendered last, else before the tool's reply (what
        // the model writes to hand over to the tool: Gemma 4's
        // `<|tool_response>`, GLM's `<|observation|>`).
        // The call ends after its last argument value and the quotes,
        // brackets and closers the format writes: the turn's end follows
        // them.
        let after_call = |text: &str| -> Option<String> {
            let from = text.rfind("YYYY")? + "YYYY".len();
            let mut tail = &text[from..];
            loop {
                let before = tail.len();
                tail = tail.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '}' | ']' | ')'));
                for k in &known {
                    if let Some(t) = tail.strip_prefix(k.as_str()) {
                        tail = t;
                    }
                }
                if tail.len() == before {
                    break;
                }
            }
            Some(tail.to_string())
        };
        for messages in [convo(turn.clone()), json!([user_msg(), turn.clone(), reply])] {
            let Some(text) = r.render("C2 end of turn: tool call", &Scenario::with_tools(messages)) else { continue };
            let Some(tail) = after_call(&text) else { continue };
            if take(&tail) {
                break;
            }
        }
        // A request that declares built-in tools switches Llama 3.1's
        // template to its ipython mode, whose call turns end with
        // `<|eom_id|>` instead (the model writes it after any call there;
        // llama.cpp stops at it): the call turn rendered with the variable
        // set too, where the template reads it.
        if r.template.variables().iter().any(|v| v == BUILTIN_TOOLS) {
            let mut ctx = r.context(&Scenario::with_tools(convo(turn)));
            if let Some(map) = ctx.as_object_mut() {
                map.insert(BUILTIN_TOOLS.to_string(), json!([]));
            }
            if let Some(tail) = r.template.render(&ctx).ok().as_deref().and_then(after_call) {
                take(&tail);
            }
        }
    }
    out
}

/// The request variable that lists a model's built-in tools (Llama 3.1's
/// `builtin_tools`, as HF's `apply_chat_template` passes it).
const BUILTIN_TOOLS: &str = "builtin_tools";

/// The markers the format already reads (content, reasoning and call
/// markup): a turn's end is none of them.
fn known_markers(spec: &crate::spec::FormatSpec) -> Vec<String> {
    [&spec.reasoning.start, &spec.reasoning.end, &spec.content.start]
        .into_iter()
        .chain(spec.tools.markers())
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The marker at the start of `tail` that ends the turn: a special token
/// in angle brackets (`<|eot_id|>`, `<turn|>`, `<sep>`) or a short word
/// framed by punctuation (`[e~[`), after whitespace and markers the format
/// already reads; none when text, a longer word or a marker that opens a
/// turn (the generation prompt writes it) comes first. After
/// `content_end` (the content's own end marker, where it ends the reply:
/// Command R+'s `<|END_OF_TURN_TOKEN|>`), that marker and the next.
fn turn_end_markers(tail: &str, known: &[String], content_end: &str, prompt: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = tail.trim_start();
    'skip: loop {
        for k in known {
            if let Some(r) = rest.strip_prefix(k.as_str()) {
                rest = r.trim_start();
                continue 'skip;
            }
        }
        break;
    }
    while found.len() < 2 {
        let token = if rest.starts_with('<') {
            match rest.find('>') {
                Some(end) => &rest[..end + 1],
                None => break,
            }
        } else {
            &rest[..rest.find(char::is_whitespace).unwrap_or(rest.len())]
        };
        let framed = |t: &str| t.chars().next().is_some_and(|c| !c.is_alphanumeric()) && t.chars().last().is_some_and(|c| !c.is_alphanumeric());
        let special = token.starts_with('<') && token.chars().count() <= 32;
        let word = !token.starts_with('<') && token.chars().count() <= 6 && framed(token);
        let marker = (special || word) && token.chars().any(char::is_alphanumeric) && !token.contains(char::is_whitespace);
        if !marker || prompt.contains(token) {
            break;
        }
        found.push(token.to_string());
        if token != content_end {
            break;
        }
        rest = rest[token.len()..].trim_start();
    }
    found
}
