//! Support for HF's `{% generation %}...{% endgeneration %}` block.
//!
//! transformers registers a jinja2 extension (`AssistantTracker`) so that templates can
//! mark the assistant's text for `return_assistant_tokens_mask`; for rendering, the block
//! simply outputs its body (LFM2.5 uses it). minijinja has no custom tags, so before
//! compiling, the tags are rewritten to `{% if true %}...{% endif %}`: the keywords are
//! replaced in place and everything else, including `-`/`+` whitespace control and line
//! breaks, is kept, so trimming and line numbers in error messages stay the same.

use std::borrow::Cow;

/// Returns `source` with `generation`/`endgeneration` tags rewritten, borrowing when
/// there are none. Comments, `{% raw %}` blocks and string literals are left alone.
pub(crate) fn rewrite_generation_tags(source: &str) -> Cow<'_, str> {
    if !source.contains("generation") {
        return Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    let mut changed = false;
    while let Some(open) = rest.find('{') {
        let (before, from_brace) = rest.split_at(open);
        out.push_str(before);
        let consumed = if from_brace.starts_with("{#") {
            from_brace
                .find("#}")
                .map_or(from_brace.len(), |end| end + 2)
        } else if from_brace.starts_with("{{") {
            tag_end(from_brace, "}}")
        } else if from_brace.starts_with("{%") {
            let end = tag_end(from_brace, "%}");
            let tag = &from_brace[..end];
            match rewrite_tag(tag) {
                Some(rewritten) => {
                    out.push_str(&rewritten);
                    changed = true;
                    rest = &from_brace[end..];
                    continue;
                }
                None if first_word(tag) == Some("raw") => raw_block_end(from_brace, end),
                None => end,
            }
        } else {
            1
        };
        out.push_str(&from_brace[..consumed]);
        rest = &from_brace[consumed..];
    }
    out.push_str(rest);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(source)
    }
}

/// Length of the tag starting at `s[0]` up to and including `close`, skipping over
/// quoted strings; the whole rest when unterminated (the parser will report that).
fn tag_end(s: &str, close: &str) -> usize {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (at, c) in s.char_indices().skip(2) {
        match quote {
            Some(_) if escaped => escaped = false,
            Some(_) if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if s[at..].starts_with(close) => return at + close.len(),
            None => {}
        }
    }
    s.len()
}

/// The tag's statement keyword: the first word after `{%` and an optional `-`/`+`.
fn first_word(tag: &str) -> Option<&str> {
    let body = tag.get(2..)?.trim_start_matches(['-', '+']).trim_start();
    let end = body
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(body.len());
    Some(&body[..end]).filter(|word| !word.is_empty())
}

/// `{%- generation %}` becomes `{%- if true %}`, `{% endgeneration -%}` becomes
/// `{% endif -%}`; other tags give `None`.
fn rewrite_tag(tag: &str) -> Option<String> {
    let word = first_word(tag)?;
    let replacement = match word {
        "generation" => "if true",
        "endgeneration" => "endif",
        _ => return None,
    };
    let at = tag.find(word)?;
    let after = &tag[at + word.len()..];
    // Only a bare tag is HF's: anything but whitespace control before `%}` is not.
    let trailing = after.strip_suffix("%}")?.trim();
    if !(trailing.is_empty() || trailing == "-" || trailing == "+") {
        return None;
    }
    Some(format!("{}{replacement}{after}", &tag[..at]))
}

/// Length from the `{% raw %}` tag (which is `tag_len` long) through its `{% endraw %}`.
fn raw_block_end(s: &str, tag_len: usize) -> usize {
    let mut at = tag_len;
    while let Some(found) = s[at..].find("{%") {
        let start = at + found;
        let end = start + tag_end(&s[start..], "%}");
        if first_word(&s[start..end]) == Some("endraw") {
            return end;
        }
        at = start + 2;
    }
    s.len()
}
