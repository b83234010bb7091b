//! Behaviour pinned against Python jinja2 3.1 configured like HF transformers; every
//! expected string here is what Python produced for the same template and context.

use serde_json::{json, Value as Json};

use super::{ChatTemplate, TemplateError, TemplateErrorKind};

fn render(src: &str, ctx: Json) -> String {
    let template = ChatTemplate::new("t.jinja", src).unwrap_or_else(|e| panic!("compile: {e}"));
    template
        .render(&ctx)
        .unwrap_or_else(|e| panic!("render: {e}"))
}

fn render_err(src: &str, ctx: Json) -> TemplateError {
    match ChatTemplate::new("t.jinja", src).and_then(|t| t.render(&ctx)) {
        Ok(out) => panic!("expected an error, rendered {out:?}"),
        Err(err) => err,
    }
}

// 1. Whitespace control.

#[test]
fn trim_and_lstrip_blocks_are_on_and_one_trailing_newline_is_dropped() {
    let src = "{% if true %}\n  hello\n{% endif %}\n  {% if true %}x{% endif %}\nend\n";
    assert_eq!(render(src, json!({})), "  hello\nxend");
    assert_eq!(render("a\n\n", json!({})), "a\n");
}

// 2. Python methods.

#[test]
fn string_methods_missing_from_pycompat() {
    let src =
        "{{ 'abc'.removeprefix('a') }}|{{ 'abc'.removesuffix('c') }}|{{ 'abc'.removeprefix('z') }}";
    assert_eq!(render(src, json!({})), "bc|ab|abc");
    let src = "{{ 'a,b,c'.rsplit(',', 1) }}|{{ '  a b  c '.rsplit(None, 1) }}|{{ 'a b'.rsplit() }}|{{ 'a,b,c'.rsplit(',') }}";
    assert_eq!(
        render(src, json!({})),
        "['a,b', 'c']|['  a b', 'c']|['a', 'b']|['a', 'b', 'c']"
    );
    let src = "{{ 'hello'.index('l') }}|{{ [1, 2, 3].index(2) }}|{{ 'hello'.rindex('l') }}|{{ 'hello'.find('z') }}|{{ 'héllo'.find('l') }}|{{ 'hello'.find('l', 3) }}";
    assert_eq!(render(src, json!({})), "2|1|3|-1|2|3");
    let src =
        "{{ 'a=b=c'.partition('=') }}|{{ 'a=b=c'.rpartition('=') }}|{{ 'abc'.partition('x') }}";
    assert_eq!(
        render(src, json!({})),
        "('a', '=', 'b=c')|('a=b', '=', 'c')|('abc', '', '')"
    );
    let src = "{{ '42'.zfill(5) }}|{{ '-42'.zfill(5) }}|{{ 'ab'.center(7, '*') }}|{{ 'ab'.ljust(4) }}|{{ 'ab'.rjust(4, '.') }}";
    assert_eq!(render(src, json!({})), "00042|-0042|***ab**|ab  |..ab");
    assert_eq!(
        render_err("{{ 'abc'.index('z') }}", json!({})).kind,
        TemplateErrorKind::Render
    );
}

#[test]
fn split_follows_python() {
    let src = "{{ '  a  b c '.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ '  a  b c '.split(None, 1) }}|{{ 'a-b-c'.split('-', maxsplit=1) }}";
    assert_eq!(
        render(src, json!({})),
        "['a', 'b', 'c']|['a', 'b,c']|['a', 'b c ']|['a', 'b-c']"
    );
    assert_eq!(
        render("{{ 'a</think>b'.split('</think>')[-1] }}", json!({})),
        "b"
    );
    assert_eq!(
        render_err("{{ 'abc'.split('') }}", json!({})).kind,
        TemplateErrorKind::Render
    );
}

#[test]
fn string_methods_covered_by_pycompat() {
    let src = "{{ 'hello'.startswith(('x', 'he')) }}|{{ 'hello'.endswith(('lo',)) }}|{{ 'hello'.startswith('hex') }}";
    assert_eq!(render(src, json!({})), "True|True|False");
    let src = "[{{ '\n x \n'.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\n\nhi\n'.lstrip('\n') }}|{{ 'hi  '.rstrip() }}]";
    assert_eq!(render(src, json!({})), "[x|hi|hi\n|hi]");
    let src = "{{ 'hello world'.title() }}|{{ 'Hi'.upper() }}|{{ 'Hi'.lower() }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'banana'.count('a') }}";
    assert_eq!(render(src, json!({})), "Hello World|HI|hi|bba|3");
}

#[test]
fn dict_and_list_methods() {
    let src = "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ d.keys()|list }}|{{ d.values()|list }}|{{ d.get('x', 'dflt') }}|{{ d.get('a') }}|{{ d.get('x') }}";
    assert_eq!(
        render(src, json!({"d": {"a": 1, "b": "two"}})),
        "a=1;b=two;|['a', 'b']|[1, 'two']|dflt|1|None"
    );
    let src = "{% set ns = namespace(l=[1]) %}{% set c = ns.l.copy() %}{% set _ = c.append(2) %}{{ ns.l }}{{ c }}|{{ d.copy() }}";
    assert_eq!(render(src, json!({"d": {"a": 1}})), "[1][1, 2]|{'a': 1}");
}

// 3. tojson.

#[test]
fn tojson_is_python_json_dumps_without_html_escaping() {
    let ctx = json!({"d": {"a": 1, "b": [1, 2], "c": "<&'>", "f": 1.0, "n": null, "t": true, "u": "é\n\t\"\\\u{1}"}});
    assert_eq!(
        render("{{ d|tojson }}", ctx),
        r#"{"a": 1, "b": [1, 2], "c": "<&'>", "f": 1.0, "n": null, "t": true, "u": "é\n\t\"\\\u0001"}"#
    );
}

#[test]
fn tojson_indent_separators_and_sort_keys() {
    let ctx = json!({"d": {"a": 1, "b": [1, {"c": []}], "e": {}}});
    assert_eq!(
        render("{{ d|tojson(indent=2) }}", ctx),
        "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    {\n      \"c\": []\n    }\n  ],\n  \"e\": {}\n}"
    );
    let src = "{{ d|tojson(separators=(',', ':')) }}|{{ d|tojson(sort_keys=true) }}|{{ d|tojson(indent='\t') }}";
    assert_eq!(
        render(src, json!({"d": {"z": 1, "a": [1, 2]}})),
        "{\"z\":1,\"a\":[1,2]}|{\"a\": [1, 2], \"z\": 1}|{\n\t\"z\": 1,\n\t\"a\": [\n\t\t1,\n\t\t2\n\t]\n}"
    );
}

#[test]
fn tojson_ascii_and_numbers() {
    let src = "{{ 'é😀'|tojson(ensure_ascii=True) }}|{{ 'é😀'|tojson }}|{{ x|tojson }}|{{ y|tojson }}|{{ [1.5, 100.0, 0.0001, 0.00001, 12345678901234567890]|tojson }}";
    assert_eq!(
        render(src, json!({"x": 1e20, "y": 0.1})),
        r#""\u00e9\ud83d\ude00"|"é😀"|1e+20|0.1|[1.5, 100.0, 0.0001, 1e-05, 12345678901234567890]"#
    );
    // Python's signature is tojson(x, ensure_ascii, indent, ...): positional 2 is ensure_ascii.
    assert_eq!(render("{{ ['é']|tojson(2) }}", json!({})), r#"["\u00e9"]"#);
    assert_eq!(
        render_err("{{ x|tojson }}", json!({})).kind,
        TemplateErrorKind::Render
    );
    assert_eq!(
        render_err("{{ 1|tojson(bogus=1) }}", json!({})).kind,
        TemplateErrorKind::Render
    );
}

// 4. raise_exception.

#[test]
fn raise_exception_carries_the_templates_message() {
    let src = "line one\n{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}";
    let err = render_err(src, json!({"messages": [{"role": "system"}]}));
    assert_eq!(err.kind, TemplateErrorKind::Raised);
    assert_eq!(err.message, "System role not supported");
    assert_eq!(err.line, Some(2));
    assert_eq!(
        err.to_string(),
        "t.jinja:2: template raised: System role not supported"
    );
}

#[test]
fn raise_exception_inside_a_macro_is_still_raised() {
    let src = "{% macro check(r) %}{% if r != 'user' %}{{ raise_exception('bad role ' + r) }}{% endif %}{% endmacro %}{{ check('tool') }}";
    let err = render_err(src, json!({}));
    assert_eq!(
        (err.kind, err.message.as_str()),
        (TemplateErrorKind::Raised, "bad role tool")
    );
}

// 5. strftime_now.

#[test]
fn strftime_now_is_pinned_to_2026_01_01() {
    let src = "{{ strftime_now('%Y-%m-%d %B %b %H:%M:%S %A %a %e %j %y %p %I %% %-d %U %W %c %x %X %D %F %T %u %w') }}";
    assert_eq!(
        render(src, json!({})),
        "2026-01-01 January Jan 00:00:00 Thursday Thu  1 001 26 AM 12 % 1 00 00 Thu Jan  1 00:00:00 2026 01/01/26 00:00:00 01/01/26 2026-01-01 00:00:00 4 4"
    );
    assert_eq!(
        render(
            "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Q') }}",
            json!({})
        ),
        "01 Jan 2026|%Q"
    );
}

// 6. Mutable namespace lists.

#[test]
fn namespace_lists_support_python_list_methods() {
    let src = "{% set ns = namespace(items=[]) %}{% set _ = ns.items.append(1) %}{% set _ = ns.items.append('b') %}\
        {% set _ = ns.items.extend([3, 4]) %}{% set _ = ns.items.insert(0, 'z') %}{{ ns.items }}|{{ ns.items|length }}|\
        {{ ns.items.pop(0) }}|{{ ns.items.pop() }}|{{ ns.items }}|{{ ns.items[-1] }}|{{ 'b' in ns.items }}|\
        {{ ns.items|join(',') }}|{{ ns.items|tojson }}|{% for x in ns.items %}{{ x }}{% if not loop.last %};{% endif %}{% endfor %}|\
        {{ ns.items|first }}|{{ ns.items|last }}|{{ ns.items.index('b') }}|{{ ns.items.count(1) }}";
    assert_eq!(
        render(src, json!({})),
        "['z', 1, 'b', 3, 4]|5|z|4|[1, 'b', 3]|3|True|1,b,3|[1, \"b\", 3]|1;b;3|1|3|1|1"
    );
}

#[test]
fn kimi_style_tool_id_queue() {
    let src = "{% set q = namespace(ids=[]) %}{% for m in msgs %}{% set _ = q.ids.append(m) %}{% endfor %}\
        {% for m in msgs %}{{ q.ids.pop(0) }}{% endfor %}[{{ q.ids|length }}]";
    assert_eq!(render(src, json!({"msgs": ["x", "y", "z"]})), "xyz[0]");
}

#[test]
fn mutation_errors_are_reported_not_panics() {
    let plain = render_err("{% set x = [] %}{% set _ = x.append(1) %}", json!({}));
    assert_eq!(plain.kind, TemplateErrorKind::Render);
    assert!(plain.message.contains("namespace()"), "{}", plain.message);
    let cycle = render_err(
        "{% set ns = namespace(a=[]) %}{% set _ = ns.a.append([ns.a]) %}",
        json!({}),
    );
    assert_eq!(cycle.kind, TemplateErrorKind::Render);
    let empty = render_err("{% set ns = namespace(a=[]) %}{{ ns.a.pop() }}", json!({}));
    assert_eq!(empty.kind, TemplateErrorKind::Render);
    assert_eq!(
        render(
            "{% set ns = namespace(a=[1]) %}{{ ns.a.append(2) }}{{ ns.a }}",
            json!({})
        ),
        "None[1, 2]"
    );
}

// 7. from_json.

#[test]
fn from_json_parses_strings() {
    let src = "{% set args = s|from_json %}{{ args.a[1] }}|{{ args }}";
    assert_eq!(
        render(src, json!({"s": "{\"a\": [1, 2.5], \"b\": null}"})),
        "2.5|{'a': [1, 2.5], 'b': None}"
    );
    assert_eq!(
        render_err("{{ '{oops'|from_json }}", json!({})).kind,
        TemplateErrorKind::Render
    );
}

// 8. indent.

#[test]
fn indent_matches_jinja2() {
    let src = "[{{ 'a\nb\n\nc'|indent(2) }}]|[{{ 'a\nb'|indent(4, first=true) }}]|[{{ 'a\n\nb'|indent('> ', blank=true) }}]|[{{ 'a\n'|indent }}]|[{{ 'a\r\nb'|indent(1) }}]";
    assert_eq!(
        render(src, json!({})),
        "[a\n  b\n\n  c]|[    a\n    b]|[a\n> \n> b]|[a\n]|[a\n b]"
    );
}

// 9. length.

#[test]
fn length_of_undefined_is_zero_and_strings_count_characters() {
    let src = "{{ missing|length }}|{{ 'héllo'|length }}|{{ {'a': 1}|length }}|{{ [1, 2]|length }}";
    assert_eq!(render(src, json!({})), "0|5|1|2");
}

// 10. replace.

#[test]
fn replace_filter_takes_a_count() {
    let src = "{{ 'aaaa'|replace('a', 'b', 2) }}|{{ 'aaaa'|replace('a', 'b') }}";
    assert_eq!(render(src, json!({})), "bbaa|bbbb");
}

// 11. Undefined values.

#[test]
fn undefined_is_lenient_like_jinja2_default() {
    let src = "[{{ missing }}]{{ missing is defined }}{% if missing %}y{% else %}n{% endif %}{% for x in missing %}{% endfor %}{{ d.nope is defined }}[{{ d.nope }}]";
    assert_eq!(render(src, json!({"d": {}})), "[]FalsenFalse[]");
    assert_eq!(
        render_err("{{ missing.attr }}", json!({})).kind,
        TemplateErrorKind::Render
    );
}

// 12. Fuel.

#[test]
fn runaway_templates_run_out_of_fuel() {
    let endless =
        "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}";
    assert_eq!(
        render_err(endless, json!({})).kind,
        TemplateErrorKind::OutOfFuel
    );
    let recursive = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}";
    assert_eq!(
        render_err(recursive, json!({})).kind,
        TemplateErrorKind::OutOfFuel
    );
}

// 13. Python value semantics, tests and common filters.

#[test]
fn values_print_like_python_str() {
    let src = "{{ true }}|{{ none }}|{{ 1.0 }}|{{ 3 }}|{{ d }}|{{ [1, 'a', none, false, 2.5] }}|{{ d|string }}|{{ [\"it's\"] }}|{{ 7 / 2 }}|{{ 6 / 2 }}|{{ 7 // 2 }}";
    assert_eq!(
        render(src, json!({"d": {"a": 1, "s": "x"}})),
        "True|None|1.0|3|{'a': 1, 's': 'x'}|[1, 'a', None, False, 2.5]|{'a': 1, 's': 'x'}|[\"it's\"]|3.5|3.0|3"
    );
    let src = r#"{{ true|string }}|{{ 1.0|string }}|{{ none|string }}|{{ ['a"b', "c'd", 'e\'f"g'] }}|{{ ['\x00\x7f\xa0é\u200b'] }}"#;
    assert_eq!(
        render(src, json!({})),
        r#"True|1.0|None|['a"b', "c'd", 'e\'f"g']|['\x00\x7f\xa0é\u200b']"#
    );
    let src = "{{ [1e16, 1e15, 1.5e-7, -0.0, 123.456, 1e100, 2.5e-5] }}";
    assert_eq!(
        render(src, json!({})),
        "[1e+16, 1000000000000000.0, 1.5e-07, -0.0, 123.456, 1e+100, 2.5e-05]"
    );
}

#[test]
fn truthiness_and_type_tests() {
    let src =
        "{% for v in [[], '', 0, none, {}, [0], 'x', 1] %}{{ 'T' if v else 'F' }}{% endfor %}";
    assert_eq!(render(src, json!({})), "FFFFFTTT");
    let src = "{{ 'x' is string }}{{ d is mapping }}{{ l is sequence }}{{ 'x' is sequence }}{{ d is sequence }}{{ l is iterable }}\
        {{ none is iterable }}{{ 1 is number }}{{ true is boolean }}{{ 1 is boolean }}{{ l is string }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is number }}";
    assert_eq!(
        render(src, json!({"d": {"a": 1}, "l": [1]})),
        "TrueTrueTrueTrueTrueTrueFalseTrueTrueFalseFalseTrueTrueTrue"
    );
}

#[test]
fn common_filters_and_loop_variables() {
    let src = "{% for k, v in d|items %}{{ k }}:{{ v }},{% endfor %}|{% for k, v in d|dictsort %}{{ k }},{% endfor %}|\
        {{ msgs|selectattr('role', 'equalto', 'user')|list|length }}|{{ msgs|map(attribute='role')|join(',') }}|\
        {% for m in msgs %}{{ m.role }}{% if loop.last %}!{% endif %}{% endfor %}";
    let ctx = json!({"d": {"b": 2, "a": 1}, "msgs": [{"role": "user"}, {"role": "assistant"}, {"role": "user"}]});
    assert_eq!(
        render(src, ctx),
        "b:2,a:1,|a,b,|2|user,assistant,user|userassistantuser!"
    );
    let src = "{{ [1, 2]|join(', ') }}|{{ [true, none, 1.0]|join('-') }}|{{ msgs|join(',', attribute='role') }}";
    assert_eq!(
        render(
            src,
            json!({"msgs": [{"role": "user"}, {"role": "assistant"}]})
        ),
        "1, 2|True-None-1.0|user,assistant"
    );
    let src = "{{ ' x '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ '3'|int + 1 }}|{{ 'abc'|int }}|{{ '4.7'|int }}|{{ none|int }}|{{ 'x'|int(7) }}";
    assert_eq!(render(src, json!({})), "x|a|4|0|4|0|7");
}

#[test]
fn operators_indexing_and_slicing() {
    let src = "{{ 'a' ~ 'b' ~ 1 }}|{{ 'a' + 'b' }}|{{ 'a' in d }}|{{ 'z' in d }}|{{ 'ell' in 'hello' }}|{{ l[-1] }}|{{ l[::-1] }}|{{ 'abc'[::-1] }}|{{ l[1:] }}|{{ 'hello'[1:3] }}";
    assert_eq!(
        render(src, json!({"d": {"a": 1}, "l": [1, 2, 3]})),
        "ab1|ab|True|False|True|3|[3, 2, 1]|cba|[2, 3]|el"
    );
}

// HF's {% generation %} block.

#[test]
fn generation_blocks_render_their_body() {
    let src =
        "{% generation %}a{% endgeneration %}\n{%- generation -%}\n b \n{%- endgeneration -%}\n|";
    assert_eq!(render(src, json!({})), "ab|");
    let untouched =
        "{# {% generation %} #}{% raw %}{% generation %}{% endraw %}{{ '{% generation %}' }}";
    assert_eq!(
        super::generation_tag::rewrite_generation_tags(untouched),
        untouched
    );
    assert_eq!(
        render(untouched, json!({})),
        "{% generation %}{% generation %}"
    );
}

// 14. Errors.

#[test]
fn syntax_errors_name_the_file_and_line() {
    let err = ChatTemplate::new("model.jinja", "ok\n{% if x %}\n{% endfor %}")
        .err()
        .map(|e| (e.kind, e.line, e.file));
    assert_eq!(
        err,
        Some((TemplateErrorKind::Syntax, Some(3), "model.jinja".to_owned()))
    );
    let err = ChatTemplate::new("model.jinja", "{% frobnicate %}").err();
    assert!(err.is_some_and(|e| e.kind == TemplateErrorKind::Syntax
        && e.to_string().starts_with("model.jinja:1: syntax error: ")));
}

#[test]
fn render_errors_name_the_file_and_line() {
    let err = render_err("a\nb\n{{ 'x' + 1 }}", json!({}));
    assert_eq!((err.kind, err.line), (TemplateErrorKind::Render, Some(3)));
    assert!(
        err.to_string().starts_with("t.jinja:3: render error: "),
        "{err}"
    );
    let err = ChatTemplate::new("t.jinja", "x")
        .and_then(|t| t.render(&json!([1])))
        .err();
    assert_eq!(err.map(|e| e.kind), Some(TemplateErrorKind::Render));
}

// The API itself.

#[test]
fn chat_template_keeps_name_and_original_source_and_is_shareable() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ChatTemplate>();
    let src = "{% generation %}{{ messages|length }}{% endgeneration %}";
    let template = ChatTemplate::new("x.jinja", src).expect("compiles");
    assert_eq!((template.name(), template.source()), ("x.jinja", src));
    for n in 0..3 {
        let messages: Vec<Json> = (0..n).map(|_| json!({"role": "user"})).collect();
        assert_eq!(
            template.render(&json!({ "messages": messages })).ok(),
            Some(n.to_string())
        );
    }
}

#[test]
fn float_repr_matches_python() {
    use super::pyrepr::float_repr;
    let cases = [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (0.1, "0.1"),
        (1e16, "1e+16"),
        (1e15, "1000000000000000.0"),
        (123456789012345680.0, "1.2345678901234568e+17"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.5e-7, "-2.5e-07"),
        (f64::INFINITY, "inf"),
        (f64::NAN, "nan"),
    ];
    for (value, expected) in cases {
        assert_eq!(float_repr(value), expected, "{value:e}");
    }
}

// Dict order: serde_json's preserve_order keeps keys as the caller wrote them,
// as Python dicts do (HF passes tool schemas whose key order the model saw).

#[test]
fn dict_order_survives_rendering() {
    let ctx = json!({"d": {"zeta": 1, "alpha": 2, "mid": {"y": 1, "b": 2}}});
    assert_eq!(render("{{ d | tojson }}", ctx.clone()), r#"{"zeta": 1, "alpha": 2, "mid": {"y": 1, "b": 2}}"#);
    assert_eq!(render("{% for k, v in d.items() %}{{ k }},{% endfor %}", ctx.clone()), "zeta,alpha,mid,");
    assert_eq!(render("{{ d.mid }}", ctx), "{'y': 1, 'b': 2}");
}
