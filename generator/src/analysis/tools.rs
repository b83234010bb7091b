//! Phase T: how the template writes tool calls.
//!
//! - T1 classifies the format (JSON, tag with JSON arguments, tag with tagged
//!   arguments) from a render with one call, and finds the section and
//!   per-call markers (JSON field names for JSON formats).
//! - T2 tells section markers from per-call markers by rendering two calls.
//! - T3 extracts the markers around the function name (two different names).
//! - T4 (A1, A2) extracts argument name and value markers (tagged formats).
//! - T5 finds the separator between two arguments, T6 the argument container
//!   markers, T7 the call id position and markers.

use serde_json::{json, Value};

use super::pattern::p::*;
use super::pattern::Pattern;
use super::probe::*;
use crate::diff::{after_common_suffix, diff_split, until_common_prefix};
use crate::spec::*;

pub fn analyze(r: &mut Renderer<'_>, caps: &Capabilities, reasoning: &ReasoningSpec) -> ToolsSpec {
    let mut t = ToolsSpec::default();
    tool_calls(r, &mut t, reasoning, caps.supports_parallel_tool_calls);
    if t.format.mode != ToolFormatMode::None && t.format.mode != ToolFormatMode::JsonNative {
        if caps.supports_parallel_tool_calls {
            per_call_markers(r, &mut t);
        }
        function_markers(r, &mut t);
        if t.format.mode == ToolFormatMode::TagWithTagged {
            argument_name_markers(r, &mut t);
            argument_value_markers(r, &mut t);
        }
        argument_separator(r, &mut t);
        argument_container(r, &mut t);
        call_id_markers(r, &mut t);
        if caps.supports_parallel_tool_calls && t.call_id.pos == CallIdPosition::None {
            id_holding_name(r, &mut t);
        }
    }
    if t.format.mode != ToolFormatMode::None {
        argument_value_style(r, &mut t);
    }
    t
}

/// How non-string argument values are written: as JSON (`true`, `{"k": null}`)
/// or as Python literals (`True`, `{'k': None}`), which is what a template
/// gets when it prints a value without `tojson`. The model copies the style
/// its template taught it, so the parser must accept it.
fn argument_value_style(r: &mut Renderer<'_>, t: &mut ToolsSpec) {
    let with_value = |second: Value| {
        base(vec![tool_call(FUN_FIRST, json!({ARG_FIRST: {"PV_KEY": true, "PV_NONE": null}, ARG_SECOND: second}), CALL_ID_001)])
    };
    let Some(boolean) = r.render("T8 argument value style", &with_value(json!(true))) else { return };
    // A nested null written `None`, whatever the key syntax (`'PV_NONE': None`,
    // Gemma 4's bare `PV_NONE:None`).
    let none_value = seq(vec![lit("PV_NONE"), choice(vec![lit("'"), lit("\""), lit("")]), space(), lit(":"), space(), lit("None")]);
    t.format.python_dict_arguments = boolean.contains("'PV_KEY': True") || none_value.match_anywhere(&boolean).matched;
    // A top-level `true` that adds a `True` to the render is a Python scalar.
    if let Some(text) = r.render("T8 argument value style", &with_value(json!("PV_TEXT"))) {
        t.format.python_scalar_arguments = boolean.matches("True").count() > text.matches("True").count();
    }
}

fn base(calls: Vec<Value>) -> Scenario {
    Scenario::with_tools(convo(assistant_calls(calls)))
}

fn one_arg_call(arg: &str, value: &str) -> Value {
    tool_call(FUN_FIRST, json!({ arg: value }), CALL_ID_001)
}

/// `"needle"` right after `{` or `:` (whitespace allowed): the needle is a JSON
/// string in key or value position.
fn in_json(haystack: &str, needle: &str) -> bool {
    seq(vec![choice(vec![lit("{"), lit(":")]), space(), lit(format!("\"{needle}\""))]).match_anywhere(haystack).matched
}

/// Removes the first occurrence of `marker` from `text`.
fn remove_first(text: &str, marker: &str) -> String {
    match (marker.is_empty(), text.find(marker)) {
        (false, Some(pos)) => format!("{}{}", &text[..pos], &text[pos + marker.len()..]),
        _ => text.to_string(),
    }
}

/// T1: no calls versus one call.
fn tool_calls(r: &mut Renderer<'_>, t: &mut ToolsSpec, reasoning: &ReasoningSpec, parallel: bool) {
    let no_calls = Scenario::with_tools(convo(assistant_text()));
    let Some(cmp) = r.compare("T1 tool calls", &no_calls, &base(vec![first_call()])) else { return };
    let section = cmp.diff.right;
    if section.is_empty() {
        return;
    }
    t.format.mode = if in_json(&section, FUN_FIRST) {
        ToolFormatMode::JsonNative
    } else if in_json(&section, ARG_FIRST) {
        ToolFormatMode::TagWithJson
    } else {
        ToolFormatMode::TagWithTagged
    };
    let clean = remove_first(&remove_first(&section, &reasoning.start), &reasoning.end);
    if t.format.mode == ToolFormatMode::JsonNative {
        json_native_format(&clean, t);
        if parallel {
            json_native_parallel(r, t);
        }
    } else {
        tagged_format(&clean, t);
    }
    // End markers are matched leniently anyway: their whitespace does not matter.
    t.format.section_end = t.format.section_end.trim().to_string();
    t.format.per_call_end = t.format.per_call_end.trim().to_string();
}

/// Finds the JSON object of the call and which field holds what.
fn json_native_format(haystack: &str, t: &mut ToolsSpec) {
    let (Some(mut json_start), Some(mut json_end)) = (haystack.find('{'), haystack.rfind('}')) else { return };
    if json_end < json_start {
        return;
    }
    let cut = &haystack[json_start..=json_end];
    let call: Value = match serde_json::from_str(cut) {
        Ok(v) => v,
        Err(_) => match python_literal_to_json(cut) {
            // A Python dict (`{'name': ...}`): same structure, other quoting.
            Some(v) => {
                t.format.python_dict_arguments = true;
                v
            }
            None => return,
        },
    };
    let Some(fields) = call.as_object() else { return };
    let f = &mut t.format;
    let register = |prefix: &str, key: &str, value: &Value, f: &mut ToolFormat| {
        let path = if prefix.is_empty() { key.to_string() } else { format!("{prefix}.{key}") };
        let text = value.as_str();
        if text.is_some_and(|s| s.contains("call0000")) {
            f.id_field = path;
        } else if text == Some(FUN_FIRST) {
            f.name_field = path;
        } else if value.to_string().contains(ARG_FIRST) {
            // Object or string-encoded arguments alike.
            f.args_field = path;
        } else if key.contains("id") {
            // A field the model fills with an id of its own.
            f.gen_id_field = path;
        }
    };
    for (key, value) in fields {
        if key == FUN_FIRST {
            f.fun_name_is_key = true;
            f.name_field.clear();
            f.args_field.clear();
            continue;
        }
        if value.is_object() && !value.to_string().contains(ARG_FIRST) {
            f.function_field = key.clone();
            if let Some(inner) = value.as_object() {
                for (k, v) in inner {
                    register(key, k, v, f);
                }
            }
        }
        register("", key, value, f);
    }
    let array = seq(vec![tag("pre", seq(vec![lit("["), space()])), lit(cut), tag("post", seq(vec![space(), lit("]")]))]);
    let wrapped = array.match_anywhere(haystack);
    if wrapped.matched {
        f.tools_array_wrapped = true;
        json_start -= wrapped.get("pre").len();
        json_end += wrapped.get("post").len();
    }
    json_end += 1;
    let mut located: Vec<(usize, String)> = [&f.name_field, &f.args_field, &f.id_field, &f.gen_id_field]
        .into_iter()
        .filter(|name| !name.is_empty())
        .map(|name| (haystack.find(name.as_str()).unwrap_or(usize::MAX), name.clone()))
        .collect();
    located.sort();
    f.parameter_order = located.into_iter().map(|(_, name)| name).collect();
    f.section_start = haystack[..json_start].trim_start().to_string();
    f.section_end = haystack.get(json_end..).unwrap_or("").trim().to_string();
    if f.tools_array_wrapped && f.section_end == "]" {
        f.section_end.clear();
    }
}

/// JSON formats: if the second call repeats the section opener, it is a per-call opener.
fn json_native_parallel(r: &mut Renderer<'_>, t: &mut ToolsSpec) {
    let Some(cmp) = r.compare("T2 parallel calls", &base(vec![first_call()]), &base(vec![first_call(), second_call()])) else { return };
    let f = &mut t.format;
    if !f.section_start.is_empty() && cmp.diff.right.contains(f.section_start.as_str()) {
        f.per_call_start = std::mem::take(&mut f.section_start);
        f.per_call_end = std::mem::take(&mut f.section_end);
    }
}

/// Tag formats: up to two opening markers before the function name (section,
/// then per call), up to two closing markers at the end.
fn tagged_format(haystack: &str, t: &mut ToolsSpec) {
    let fun_marker_pat = tag(
        "fun_marker",
        choice(vec![
            seq(vec![
                tag("fun_pre", seq(vec![lit("<"), until_one_of(&[">", FUN_FIRST])])),
                lit(FUN_FIRST),
                tag("fun_post", seq(vec![not(seq(vec![space(), lit("<")])), until(">"), lit(">")])),
                space(),
            ]),
            seq(vec![
                tag("fun_pre", seq(vec![lit("["), until_one_of(&["]", FUN_FIRST])])),
                lit(FUN_FIRST),
                tag("fun_post", seq(vec![not(seq(vec![space(), lit("["), until("]"), lit("]")])), space()])),
            ]),
        ]),
    );
    let fun = fun_marker_pat.match_anywhere(haystack);
    let fun_marker = if fun.matched { fun.get("fun_marker").to_string() } else { FUN_FIRST.to_string() };
    let per_call = seq(vec![
        tag("sec_start", seq(vec![marker(), space()])),
        tag("call_start", seq(vec![marker(), space()])),
        tag("fun_pre", until(fun_marker.clone())),
        lit(fun_marker.clone()),
        tag("rest", rest()),
    ]);
    let mut found = per_call.match_anywhere(haystack);
    let ends;
    if found.matched {
        let two_closers = seq(vec![
            tag("call_end", seq(vec![marker(), space()])),
            tag("sec_end", seq(vec![marker(), space()])),
            end(),
        ]);
        ends = two_closers.match_anywhere(found.get("rest"));
        t.function.name_prefix = format!("{}{}", fun.get("fun_pre"), t.function.name_prefix);
    } else {
        let section = seq(vec![tag("sec_start", seq(vec![marker(), space()])), lit(fun_marker), tag("rest", rest())]);
        found = section.match_anywhere(haystack);
        let one_closer = seq(vec![tag("sec_end", seq(vec![marker(), space()])), end()]);
        ends = one_closer.match_anywhere(found.get("rest"));
    }
    t.format.per_call_start = found.get("call_start").to_string();
    t.format.per_call_end = ends.get("call_end").to_string();
    t.format.section_start = found.get("sec_start").to_string();
    t.format.section_end = ends.get("sec_end").to_string();
}

/// T2: one call versus two; a second call that starts with the section
/// opener means the "section" markers wrap each call.
fn per_call_markers(r: &mut Renderer<'_>, t: &mut ToolsSpec) {
    let Some(cmp) = r.compare("T2 per-call markers", &base(vec![first_call()]), &base(vec![first_call(), second_call()])) else { return };
    let second = diff_split(&cmp.diff.suffix, &cmp.diff.right);
    let second_call = second.right.trim_start();
    let f = &mut t.format;
    if !f.section_start.is_empty() && second_call.starts_with(f.section_start.as_str()) {
        f.per_call_start = std::mem::take(&mut f.section_start);
        f.per_call_end = std::mem::take(&mut f.section_end);
    }
}

/// The last marker of `text` and what follows it, or `None`.
fn last_marker_tail(text: &str) -> Option<String> {
    let pat = seq(vec![many(seq(vec![not(last_marker_to_end()), any()])), tag("m", last_marker_to_end())]);
    let c = pat.match_start(text);
    c.matched.then(|| c.get("m").to_string())
}

/// T3: two calls that differ only in the function name.
fn function_markers(r: &mut Renderer<'_>, t: &mut ToolsSpec) {
    let first = base(vec![first_call()]);
    let Some(cmp) = r.compare("T3 function markers", &first, &base(vec![second_call()])) else { return };
    let d = &cmp.diff;
    if !(d.left.contains(FUN_FIRST) && d.right.contains(FUN_SECOND)) {
        return;
    }
    let f = &t.format;
    let prefix_marker = if !f.per_call_start.is_empty() { f.per_call_start.clone() } else { f.section_start.clone() };
    if !prefix_marker.is_empty() {
        if let Some(pos) = d.prefix.rfind(prefix_marker.as_str()) {
            t.function.name_prefix = d.prefix[pos + prefix_marker.len()..].to_string();
        }
    }
    let name = seq(vec![tag("pre", until(FUN_FIRST)), lit(FUN_FIRST), tag("post", non_markers())]).match_start(&d.left);
    if name.matched {
        t.function.name_prefix.push_str(name.get("pre"));
        t.function.name_suffix = name.get("post").to_string();
    }
    // The name suffix runs on into the common suffix up to where the
    // arguments begin.
    if t.format.mode == ToolFormatMode::TagWithJson {
        let non_json = choice(vec![marker(), seq(vec![not(lit("{")), not(lit("[")), any()])]);
        // The arguments run to a marker, or to the end of the turn when the
        // template writes nothing after them (Mistral's `name[ARGS]{...}`
        // with an empty end-of-sequence token).
        let after_json = seq(vec![non_markers(), choice(vec![marker(), end()])]);
        let ext = seq(vec![tag("ext", many(non_json)), after_json]).match_start(&d.suffix);
        // A call id between the name and the arguments is not part of the
        // name's suffix (T7 finds its markers).
        if ext.matched && !ext.get("ext").contains(CALL_ID_001) && !d.left.contains(CALL_ID_001) {
            t.function.name_suffix.push_str(ext.get("ext"));
        }
    } else {
        let ext = tag("ext", non_markers()).match_start(&d.suffix);
        if ext.matched {
            t.function.name_suffix.push_str(ext.get("ext"));
        }
    }
    // The closer: between the last argument and the call or section end.
    let suffix_marker = if !t.format.per_call_end.is_empty() { t.format.per_call_end.clone() } else { t.format.section_end.clone() };
    let closer_region = if suffix_marker.is_empty() {
        let no_call = Scenario::with_tools(convo(assistant_text()));
        // The whole call (the closer search below skips to the last value
        // itself; the reference cuts after it first and then finds nothing,
        // which loses closers such as `</function>`).
        r.compare("T3 closer", &first, &no_call).map(|c| c.diff.left).filter(|left| left.contains("YYYY")).unwrap_or_default()
    } else {
        match d.suffix.find(suffix_marker.as_str()) {
            Some(pos) => d.suffix[..pos].to_string(),
            None => d.suffix.clone(),
        }
    };
    if !closer_region.is_empty() {
        if t.format.mode == ToolFormatMode::TagWithTagged {
            let closer = seq(vec![until("YYYY"), lit("YYYY"), space(), marker(), space(), tag("close", rest())]);
            let c = closer.match_start(&closer_region);
            if c.matched {
                t.function.close = c.get("close").to_string();
            }
        } else if t.format.mode == ToolFormatMode::TagWithJson {
            let closer = seq(vec![until("YYYY"), lit("YYYY"), tag("post_val", rest())]);
            let c = closer.match_start(&closer_region);
            if c.matched {
                let post = c.get("post_val");
                if let Some(pos) = post.rfind(['}', ']']) {
                    if pos + 1 < post.len() {
                        t.function.close = post[pos + 1..].trim_start().to_string();
                    }
                }
            }
        }
    }
    t.function.close = t.function.close.trim_start().to_string();
}

/// A1: two calls that differ only in the argument name.
fn argument_name_markers(r: &mut Renderer<'_>, t: &mut ToolsSpec) {
    let a = base(vec![one_arg_call(ARG_FIRST, "XXXX")]);
    let b = base(vec![one_arg_call(ARG_SECOND, "YYYY")]);
    let Some(cmp) = r.compare("A1 argument names", &a, &b) else { return };
    let d = &cmp.diff;
    if d.left.is_empty() || d.right.is_empty() {
        return;
    }
    let left = seq(vec![tag("pre", until(ARG_FIRST)), lit(ARG_FIRST), tag("suffix", until_one_of(&["\"", "X"]))]).match_anywhere(&d.left);
    let right =
        seq(vec![tag("pre", until(ARG_SECOND)), lit(ARG_SECOND), tag("suffix", until_one_of(&["\"", "Y"]))]).match_anywhere(&d.right);
    if left.matched
        && right.matched
        && !left.get("pre").is_empty()
        && left.get("pre") == right.get("pre")
        && left.get("suffix") == right.get("suffix")
    {
        // The name sits inside a shared wrapper.
        t.arguments.name_prefix = left.get("pre").trim().to_string();
        t.arguments.name_suffix = left.get("suffix").trim_start().to_string();
    } else if d.left.starts_with(ARG_FIRST) && d.right.starts_with(ARG_SECOND) {
        // The name starts the diff: its prefix is the last marker before it.
        t.arguments.name_prefix = last_marker_tail(&d.prefix).unwrap_or_else(|| d.prefix.clone());
        let after_first = format!("{}{}", &d.left[ARG_FIRST.len()..], d.suffix);
        let suffix = tag("suffix", seq(vec![non_markers(), marker(), space()])).match_anywhere(&after_first);
        if suffix.matched {
            t.arguments.name_suffix = suffix.get("suffix").to_string();
        }
    }
}

/// A2: the same argument with values `XXXX` and `YYYY`.
fn argument_value_markers(r: &mut Renderer<'_>, t: &mut ToolsSpec) {
    let a = base(vec![one_arg_call(ARG_FIRST, "XXXX")]);
    let b = base(vec![one_arg_call(ARG_FIRST, "YYYY")]);
    let Some(cmp) = r.compare("A2 argument values", &a, &b) else { return };
    let d = &cmp.diff;
    if !(d.left == "XXXX" && d.right == "YYYY") {
        return;
    }
    let name_ending = format!("{ARG_FIRST}{}", t.arguments.name_suffix);
    let mut prefix = d.prefix.as_str();
    if let Some(pos) = prefix.rfind(name_ending.as_str()) {
        prefix = &prefix[pos + name_ending.len()..];
    }
    if !prefix.is_empty() {
        t.arguments.value_prefix = last_marker_tail(prefix).unwrap_or_else(|| prefix.to_string());
    }
    let mut value_suffix = d.suffix.as_str();
    let stop = if !t.function.close.is_empty() {
        t.function.close.clone()
    } else if !t.format.per_call_end.is_empty() {
        t.format.per_call_end.clone()
    } else {
        t.format.section_end.clone()
    };
    if !stop.is_empty() {
        if let Some(pos) = value_suffix.find(stop.as_str()) {
            value_suffix = &value_suffix[..pos];
        }
    }
    let value_suffix = value_suffix.trim_start();
    if !value_suffix.is_empty() {
        t.arguments.value_suffix = value_suffix.to_string();
    }
    typed_value_prefix(r, t, &name_ending, &d.left, &cmp.output_a);
}

/// A3: the same argument with a number instead of a string. A template that
/// writes the value's type into the markup (`string="false">`) shows a
/// different prefix before it.
fn typed_value_prefix(r: &mut Renderer<'_>, t: &mut ToolsSpec, name_ending: &str, string_value: &str, string_render: &str) {
    const NUMBER: i64 = 987654321;
    let number = base(vec![tool_call(FUN_FIRST, json!({ ARG_FIRST: NUMBER }), CALL_ID_001)]);
    let Some(render) = r.render("A3 typed value prefix", &number) else { return };
    let between = |render: &str, value: &str| -> Option<String> {
        let name_at = render.rfind(name_ending)? + name_ending.len();
        let value_at = render[name_at..].find(value)? + name_at;
        Some(render[name_at..value_at].to_string())
    };
    let (Some(for_string), Some(for_json)) = (between(string_render, string_value), between(&render, &NUMBER.to_string())) else { return };
    if for_string == for_json || for_string.trim().is_empty() || for_json.trim().is_empty() {
        return;
    }
    // Both prefixes are markers (no probe text inside them).
    if for_json.contains(ARG_SECOND) || for_json.contains(FUN_FIRST) || for_string.contains(ARG_SECOND) {
        return;
    }
    // The type is a word inside shared markup: both prefixes start alike
    // (`" string="`) and differ after that (the IR builder splits them so).
    if crate::ir::build::typed_prefixes(&for_string, &for_json).is_none() {
        return;
    }
    t.arguments.value_prefix = for_string;
    t.arguments.json_value_prefix = for_json;
}

/// T5: one argument versus two.
fn argument_separator(r: &mut Renderer<'_>, t: &mut ToolsSpec) {
    let a = base(vec![one_arg_call(ARG_FIRST, "XXXX")]);
    let Some(cmp) = r.compare("T5 argument separator", &a, &base(vec![first_call()])) else { return };
    if !cmp.diff.right.is_empty() {
        t.arguments.separator = until_common_prefix(&cmp.diff.right, ARG_FIRST, ARG_SECOND).to_string();
    }
}

/// T6: no arguments versus one (container markers; JSON formats only).
fn argument_container(r: &mut Renderer<'_>, t: &mut ToolsSpec) {
    let none = base(vec![tool_call(FUN_FIRST, json!({}), CALL_ID_001)]);
    let Some(cmp) = r.compare("T6 argument container", &none, &base(vec![one_arg_call(ARG_FIRST, "XXXX")])) else { return };
    if t.format.mode != ToolFormatMode::JsonNative {
        return;
    }
    let d = &cmp.diff;
    let f = &t.format;
    let prefix_marker = if !f.section_start.is_empty() { &f.section_start } else { &f.per_call_start };
    let suffix_marker = if !f.section_end.is_empty() { &f.section_end } else { &f.per_call_end };
    let prefix_pos = if prefix_marker.is_empty() { 0 } else { d.prefix.rfind(prefix_marker.as_str()).unwrap_or(0) };
    let suffix_pos =
        if suffix_marker.is_empty() { d.suffix.len() } else { d.suffix.find(suffix_marker.as_str()).unwrap_or(d.suffix.len()) };
    let prefix_cut = d.prefix.get(prefix_pos + prefix_marker.len()..).unwrap_or("");
    let suffix_cut = &d.suffix[..suffix_pos];
    let mut start = until_common_prefix(prefix_cut, "{}", "{\"first\":");
    let end = after_common_suffix(suffix_cut, "{}", "\"XXXX\"}");
    if !start.is_empty() || !end.is_empty() {
        if let Some(pos) = start.find(FUN_FIRST) {
            start = &start[pos + FUN_FIRST.len()..];
        }
        if let Some(pos) = start.find(CALL_ID_001) {
            start = &start[pos + CALL_ID_001.len()..];
        }
        t.arguments.start = start.to_string();
        t.arguments.end = end.to_string();
    }
}

/// The first marker of `text`, or "".
fn first_marker(text: &str) -> String {
    tag("m", marker()).match_anywhere(text).get("m").to_string()
}

/// T7: the same call with ids `call00001` and `call99999`.
fn call_id_markers(r: &mut Renderer<'_>, t: &mut ToolsSpec) {
    let alt = tool_call(FUN_FIRST, json!({ARG_FIRST: "XXXX", ARG_SECOND: "YYYY"}), CALL_ID_999);
    let Some(cmp) = r.compare("T7 call ids", &base(vec![first_call()]), &base(vec![alt])) else { return };
    let d = &cmp.diff;
    if d.left.is_empty() && d.right.is_empty() {
        return;
    }
    let common_id = &CALL_ID_001[..crate::diff::common_prefix_len(CALL_ID_001, CALL_ID_999)];
    let in_prefix = d.prefix.rfind(FUN_FIRST);
    let in_suffix = d.suffix.find(FUN_FIRST);
    let id = &mut t.call_id;
    match (in_prefix, in_suffix) {
        (Some(fun_pos), None) => {
            let args_in_prefix = d.prefix[fun_pos..].find('{').map(|p| p + fun_pos);
            let args_in_suffix = d.suffix.find('{');
            if args_in_suffix.is_some() && args_in_prefix.is_none() {
                id.pos = CallIdPosition::BetweenFuncAndArgs;
                let after_func = &d.prefix[fun_pos + FUN_FIRST.len()..];
                let pat = seq(vec![
                    tag("prefix", marker()),
                    many(seq(vec![not(marker()), not(lit(common_id)), any()])),
                    lit(common_id),
                ]);
                let c = pat.match_anywhere(after_func);
                id.prefix = if c.matched {
                    c.get("prefix").to_string()
                } else {
                    last_marker_only(after_func)
                };
                let suffix = seq(vec![many(seq(vec![not(marker()), not(lit("{")), any()])), tag("suffix", marker())]);
                let c = suffix.match_anywhere(&d.suffix);
                if c.matched {
                    id.suffix = c.get("suffix").to_string();
                }
            } else if let Some(args_pos) = args_in_prefix {
                id.pos = CallIdPosition::PostArgs;
                let after_args = &d.prefix[args_pos..];
                if let Some(brace) = after_args.rfind('}') {
                    id.prefix = last_marker_only(&after_args[brace + 1..]);
                }
                id.suffix = first_marker(&d.suffix);
            }
        }
        (None, Some(fun_pos)) => {
            id.pos = CallIdPosition::PreFuncName;
            id.prefix = last_marker_only(&d.prefix);
            id.suffix = first_marker(&d.suffix[..fun_pos]);
        }
        _ => {}
    }
    if id.prefix == t.arguments.end {
        id.prefix.clear();
    }
    if id.suffix == t.arguments.start {
        id.suffix.clear();
    }
    // A per-call end that begins with the id suffix swallowed the id: drop it.
    if id.pos != CallIdPosition::None && !id.suffix.is_empty() && t.format.per_call_end.starts_with(id.suffix.as_str()) {
        t.format.per_call_end.clear();
    }
}

/// T7b: a template that writes no call id of its own but makes one out of
/// the name and the call's index, `namespace.NAME:index` (Kimi K2): the
/// name's markers then hold a namespace (`functions.`) and an index (`:0`),
/// and the second of two calls shows the next index (`:1`).
fn id_holding_name(r: &mut Renderer<'_>, t: &mut ToolsSpec) {
    let prefix = t.function.name_prefix.clone();
    let suffix = t.function.name_suffix.clone();
    let namespace = prefix.trim_start();
    let index = suffix.strip_prefix(':').map(|s| s.trim_start_matches(|c: char| c.is_ascii_digit()));
    let Some(after_index) = index else { return };
    if !namespace.ends_with('.') || namespace.len() < 2 || after_index.len() + 1 >= suffix.len() || after_index.trim().is_empty() {
        return;
    }
    let Some(two) = r.render("T7b id holding the name", &base(vec![first_call(), second_call()])) else { return };
    let first = format!("{namespace}{FUN_FIRST}:0");
    let second = format!("{namespace}{SSS}:1", SSS = FUN_SECOND);
    if !(two.contains(&first) && two.contains(&second)) {
        return;
    }
    t.function.name_prefix.clear();
    t.function.name_suffix.clear();
    t.call_id = CallIdMarkers { pos: CallIdPosition::NameInId, prefix: String::new(), suffix: after_index.trim().to_string() };
}

/// The last marker of `text` (without what follows it), or "".
pub(crate) fn last_marker_only(text: &str) -> String {
    let last: Pattern = seq(vec![marker(), non_markers(), end()]);
    let pat = seq(vec![many(seq(vec![not(last.clone()), any()])), tag("m", marker())]);
    pat.match_anywhere(text).get("m").to_string()
}

/// Reads a Python literal (`{'a': 'b', 'c': True, 'd': None}`) as JSON.
///
/// Templates that print a dict without `tojson` render it the Python way;
/// the model then writes its calls that way too.
pub fn python_literal_to_json(text: &str) -> Option<Value> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                let quote = c;
                out.push('"');
                loop {
                    let c = chars.next()?;
                    match c {
                        '\\' => {
                            let esc = chars.next()?;
                            match esc {
                                '\'' => out.push('\''),
                                '"' => out.push_str("\\\""),
                                other => {
                                    out.push('\\');
                                    out.push(other);
                                }
                            }
                        }
                        '"' if quote == '\'' => out.push_str("\\\""),
                        c if c == quote => break,
                        c => out.push(c),
                    }
                }
                out.push('"');
            }
            c if c.is_ascii_alphabetic() => {
                let mut word = String::from(c);
                while let Some(&n) = chars.peek() {
                    if n.is_ascii_alphanumeric() || n == '_' {
                        word.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push_str(match word.as_str() {
                    "True" => "true",
                    "False" => "false",
                    "None" => "null",
                    other => other,
                });
            }
            c => out.push(c),
        }
    }
    serde_json::from_str(&out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_dicts_read_as_json() {
        let v = python_literal_to_json("{'a': 'it\\'s', 'b': True, 'c': None, 'd': [1, 2.5]}").unwrap();
        assert_eq!(v, json!({"a": "it's", "b": true, "c": null, "d": [1, 2.5]}));
        assert!(python_literal_to_json("{'a': ").is_none());
    }

    #[test]
    fn json_context_detection() {
        assert!(in_json("{\"name\": \"F\"}", "F"));
        assert!(!in_json("<function=F>", "F"));
    }
}
