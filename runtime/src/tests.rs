//! Tests of the `alloc` sinks: `MessageBuilder`, `DeltaBuilder` and folding
//! deltas back into a message.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use crate::delta::{Delta, DeltaBuilder, ToolCallDelta};
use crate::message::{Message, MessageBuilder, ToolCall};
use crate::{Event, Sink};

fn build(events: &[Event<'_>]) -> Message {
    let mut builder = MessageBuilder::new();
    for &event in events {
        builder.event(event);
    }
    builder.into_message()
}

/// The deltas for `events`, taking one after each event whose position is
/// in `takes`, and finishing at the end.
fn deltas(events: &[Event<'_>], takes: &[usize]) -> Vec<Delta> {
    let mut builder = DeltaBuilder::new();
    let mut out = Vec::new();
    for (position, &event) in events.iter().enumerate() {
        builder.event(event);
        if takes.contains(&position) {
            out.extend(builder.take());
        }
    }
    out.extend(builder.finish());
    assert_eq!(builder.take(), None);
    out
}

fn fold(deltas: &[Delta]) -> Message {
    let mut message = Message::default();
    for delta in deltas {
        message.apply_delta(delta);
    }
    message
}

/// The message without `complete`, which deltas do not carry.
fn without_complete(mut message: Message) -> Message {
    for call in &mut message.tool_calls {
        call.complete = false;
    }
    message
}

fn call(name: &str, id: &str, arguments: &str, complete: bool) -> ToolCall {
    ToolCall {
        name: name.to_string(),
        id: id.to_string(),
        arguments: arguments.to_string(),
        complete,
    }
}

fn header(index: usize, id: Option<&str>, name: &str) -> ToolCallDelta {
    ToolCallDelta {
        index,
        id: id.map(String::from),
        kind: Some("function"),
        name: Some(name.to_string()),
        arguments: None,
    }
}

fn args(index: usize, arguments: &str) -> ToolCallDelta {
    ToolCallDelta {
        index,
        arguments: Some(arguments.to_string()),
        ..ToolCallDelta::default()
    }
}

fn tools(tool_calls: Vec<ToolCallDelta>) -> Delta {
    Delta {
        tool_calls,
        ..Delta::default()
    }
}

const TWO_CALLS: &[Event<'static>] = &[
    Event::Reasoning("Think"),
    Event::Reasoning("ing."),
    Event::Content("Calling "),
    Event::Content("two."),
    Event::ToolCallStart { index: 0 },
    Event::ToolId("call_"),
    Event::ToolId("1"),
    Event::ToolName("get_weather"),
    Event::ToolArgs("{\"city\":"),
    Event::ToolArgs("\"Paris\"}"),
    Event::ToolCallEnd { complete: true },
    Event::ToolCallStart { index: 1 },
    Event::ToolName("get_time"),
    Event::ToolId("call_2"),
    Event::ToolArgs("{}"),
    Event::ToolCallEnd { complete: false },
];

#[test]
fn events_assemble_into_a_message() {
    let message = build(TWO_CALLS);
    assert_eq!(
        message,
        Message {
            content: "Calling two.".to_string(),
            reasoning_content: "Thinking.".to_string(),
            tool_calls: vec![
                call("get_weather", "call_1", "{\"city\":\"Paris\"}", true),
                call("get_time", "call_2", "{}", false),
            ],
        }
    );
}

#[test]
fn message_in_progress_is_visible() {
    let mut builder = MessageBuilder::new();
    builder.event(Event::ToolCallStart { index: 0 });
    builder.event(Event::ToolName("f"));
    assert_eq!(builder.message().tool_calls, [call("f", "", "", false)]);
}

#[test]
fn call_without_arguments_keeps_them_empty() {
    let events = [
        Event::ToolCallStart { index: 0 },
        Event::ToolName("f"),
        Event::ToolCallEnd { complete: true },
    ];
    assert_eq!(build(&events).tool_calls, [call("f", "", "", true)]);
    assert_eq!(deltas(&events, &[]), [tools(vec![header(0, None, "f")])]);
}

#[test]
fn stray_tool_events_start_an_implicit_call() {
    let events = [
        Event::ToolArgs("{\"a\":1}"),
        Event::ToolCallEnd { complete: true },
        Event::ToolCallEnd { complete: false },
        Event::ToolName("g"),
    ];
    let message = build(&events);
    assert_eq!(
        message.tool_calls,
        [call("", "", "{\"a\":1}", true), call("g", "", "", false)]
    );
    assert_eq!(
        without_complete(message),
        fold(&deltas(&events, &[0, 1, 2, 3]))
    );
}

#[test]
fn a_new_start_leaves_the_open_call_incomplete() {
    let events = [
        Event::ToolCallStart { index: 0 },
        Event::ToolName("f"),
        Event::ToolCallStart { index: 1 },
        Event::ToolName("g"),
        Event::ToolCallEnd { complete: true },
    ];
    assert_eq!(
        build(&events).tool_calls,
        [call("f", "", "", false), call("g", "", "", true)]
    );
}

#[test]
fn one_take_merges_everything() {
    assert_eq!(
        deltas(TWO_CALLS, &[]),
        [Delta {
            content: Some("Calling two.".to_string()),
            reasoning_content: Some("Thinking.".to_string()),
            tool_calls: vec![
                ToolCallDelta {
                    arguments: Some("{\"city\":\"Paris\"}".to_string()),
                    ..header(0, Some("call_1"), "get_weather")
                },
                ToolCallDelta {
                    id: Some("call_2".to_string()),
                    arguments: Some("{}".to_string()),
                    ..header(1, None, "get_time")
                },
            ],
        }]
    );
}

#[test]
fn id_before_name_goes_into_the_header() {
    let events = [
        Event::ToolCallStart { index: 0 },
        Event::ToolId("call_1"),
        Event::ToolName("f"),
        Event::ToolArgs("{}"),
    ];
    // Taking after every event: the header waits for the name.
    assert_eq!(
        deltas(&events, &[0, 1, 2, 3]),
        [
            tools(vec![header(0, Some("call_1"), "f")]),
            tools(vec![args(0, "{}")])
        ]
    );
}

#[test]
fn id_after_name_comes_in_its_own_delta() {
    let events = [
        Event::ToolCallStart { index: 0 },
        Event::ToolName("f"),
        Event::ToolId("call_1"),
        Event::ToolArgs("{}"),
    ];
    let late_id = ToolCallDelta {
        index: 0,
        id: Some("call_1".to_string()),
        ..ToolCallDelta::default()
    };
    assert_eq!(
        deltas(&events, &[1, 2, 3]),
        [
            tools(vec![header(0, None, "f")]),
            tools(vec![late_id]),
            tools(vec![args(0, "{}")])
        ]
    );
    // Within one take, the late id joins the header.
    assert_eq!(
        deltas(&events, &[]),
        [tools(vec![ToolCallDelta {
            arguments: Some("{}".to_string()),
            ..header(0, Some("call_1"), "f")
        }])]
    );
}

#[test]
fn two_calls_get_their_own_indexes() {
    let taken = deltas(TWO_CALLS, &[3, 7, 9, 10, 12, 15]);
    assert_eq!(
        taken,
        [
            Delta {
                content: Some("Calling two.".to_string()),
                reasoning_content: Some("Thinking.".to_string()),
                ..Delta::default()
            },
            tools(vec![header(0, Some("call_1"), "get_weather")]),
            tools(vec![args(0, "{\"city\":\"Paris\"}")]),
            tools(vec![header(1, None, "get_time")]),
            tools(vec![ToolCallDelta {
                index: 1,
                id: Some("call_2".to_string()),
                arguments: Some("{}".to_string()),
                ..ToolCallDelta::default()
            }]),
        ]
    );
}

#[test]
fn empty_pieces_are_not_emitted() {
    let mut builder = DeltaBuilder::new();
    builder.event(Event::Content(""));
    builder.event(Event::Reasoning(""));
    assert_eq!(builder.take(), None);
    builder.event(Event::Content("a"));
    builder.event(Event::Content(""));
    assert_eq!(
        builder.take(),
        Some(Delta {
            content: Some("a".to_string()),
            ..Delta::default()
        })
    );
    builder.event(Event::ToolCallStart { index: 0 });
    builder.event(Event::ToolName("f"));
    builder.event(Event::ToolArgs(""));
    builder.event(Event::ToolId(""));
    assert_eq!(builder.take(), Some(tools(vec![header(0, None, "f")])));
    builder.event(Event::ToolArgs(""));
    builder.event(Event::ToolCallEnd { complete: true });
    assert_eq!(builder.take(), None);
}

#[test]
fn nameless_call_is_released_by_finish() {
    let mut builder = DeltaBuilder::new();
    builder.event(Event::ToolCallStart { index: 0 });
    builder.event(Event::ToolId("x"));
    assert_eq!(builder.take(), None);
    let released = ToolCallDelta {
        index: 0,
        id: Some("x".to_string()),
        kind: Some("function"),
        ..ToolCallDelta::default()
    };
    assert_eq!(builder.finish(), Some(tools(vec![released])));
}

#[test]
fn folded_deltas_equal_the_message() {
    let message = without_complete(build(TWO_CALLS));
    let every: Vec<usize> = (0..TWO_CALLS.len()).collect();
    assert_eq!(fold(&deltas(TWO_CALLS, &every)), message);
    assert_eq!(fold(&deltas(TWO_CALLS, &[])), message);
    assert_eq!(fold(&deltas(TWO_CALLS, &[4, 5, 11])), message);
}

#[test]
fn apply_delta_appends_out_of_range_index_as_new_call() {
    let mut message = Message::default();
    message.apply_delta(&tools(vec![header(7, None, "f"), args(7, "{}")]));
    // The first entry appends call 0; index 7 is still past it, so another.
    assert_eq!(
        message.tool_calls,
        [call("f", "", "", false), call("", "", "{}", false)]
    );
}

/// xorshift64*: deterministic pseudo-random numbers without dependencies.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % bound
    }
}

#[test]
fn random_event_sequences_never_panic_and_fold_back() {
    const TEXTS: [&str; 4] = ["", "a", "{\"k\":", "é"];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..2000 {
        let length = rng.below(16);
        let events: Vec<Event<'static>> = (0..length)
            .map(|_| {
                let text = TEXTS[rng.below(TEXTS.len())];
                match rng.below(7) {
                    0 => Event::Content(text),
                    1 => Event::Reasoning(text),
                    2 => Event::ToolCallStart {
                        index: rng.below(3),
                    },
                    3 => Event::ToolName(text),
                    4 => Event::ToolId(text),
                    5 => Event::ToolArgs(text),
                    _ => Event::ToolCallEnd {
                        complete: rng.below(2) == 0,
                    },
                }
            })
            .collect();
        let takes: Vec<usize> = (0..length).filter(|_| rng.below(2) == 0).collect();
        let taken = deltas(&events, &takes);
        assert!(taken.iter().all(|delta| !delta.is_empty()), "{events:?}");
        for delta in &taken {
            for entry in &delta.tool_calls {
                let no_empty = [&entry.id, &entry.name, &entry.arguments]
                    .iter()
                    .all(|field| field.as_deref() != Some(""));
                assert!(no_empty, "{events:?}");
            }
            assert_ne!(delta.content.as_deref(), Some(""), "{events:?}");
            assert_ne!(delta.reasoning_content.as_deref(), Some(""), "{events:?}");
        }
        assert_eq!(
            fold(&taken),
            without_complete(build(&events)),
            "{events:?} taking after {takes:?}"
        );
    }
}

#[cfg(feature = "serde")]
mod serde_shape {
    use super::*;

    #[test]
    fn message_serializes_with_complete_last() {
        let json = serde_json::to_string(&build(TWO_CALLS)).unwrap();
        assert_eq!(
            json,
            r#"{"content":"Calling two.","reasoning_content":"Thinking.","tool_calls":[{"name":"get_weather","id":"call_1","arguments":"{\"city\":\"Paris\"}","complete":true},{"name":"get_time","id":"call_2","arguments":"{}","complete":false}]}"#
        );
        let back: Message = serde_json::from_str(&json).unwrap();
        assert_eq!(back, build(TWO_CALLS));
    }

    #[test]
    fn message_fields_default_when_missing() {
        let message: Message =
            serde_json::from_str(r#"{"content":"hi","tool_calls":[{"name":"f"}]}"#).unwrap();
        assert_eq!(
            message,
            Message {
                content: "hi".to_string(),
                tool_calls: vec![call("f", "", "", false)],
                ..Message::default()
            }
        );
    }

    #[test]
    fn delta_serializes_like_openai() {
        let taken = deltas(TWO_CALLS, &[3, 7, 9, 10, 12, 15]);
        let json: Vec<String> = taken
            .iter()
            .map(|delta| serde_json::to_string(delta).unwrap())
            .collect();
        assert_eq!(
            json,
            [
                r#"{"content":"Calling two.","reasoning_content":"Thinking."}"#,
                r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}"#,
                r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]}"#,
                r#"{"tool_calls":[{"index":1,"type":"function","function":{"name":"get_time","arguments":""}}]}"#,
                r#"{"tool_calls":[{"index":1,"id":"call_2","function":{"arguments":"{}"}}]}"#,
            ]
        );
    }

    #[test]
    fn empty_delta_serializes_as_empty_object() {
        assert_eq!(serde_json::to_string(&Delta::default()).unwrap(), "{}");
        let id_only = tools(vec![ToolCallDelta {
            index: 2,
            id: Some("c".to_string()),
            ..ToolCallDelta::default()
        }]);
        assert_eq!(
            serde_json::to_string(&id_only).unwrap(),
            r#"{"tool_calls":[{"index":2,"id":"c"}]}"#
        );
    }
}

/// The word-compare stop match equals `starts_with` for every stop length
/// (0 to 36 bytes) and every place one byte differs or the text ends.
#[test]
fn stop_match_equals_starts_with() {
    use crate::machine::starts_with_stop;
    let text: Vec<u8> = (0..40u8).map(|i| b'a' + i % 26).collect();
    for n in 0..=36usize {
        let stop = &text[3..3 + n];
        for len in 0..40usize {
            let hay = &text[3..3 + len.min(37)];
            assert_eq!(starts_with_stop(hay, stop), hay.starts_with(stop), "stop {n} hay {len}");
            for flip in 0..n {
                let mut other = text[3..].to_vec();
                other[flip] ^= 0x20;
                let hay = &other[..len.min(other.len())];
                assert_eq!(starts_with_stop(hay, stop), hay.starts_with(stop), "stop {n} hay {len} flip {flip}");
            }
        }
    }
}

/// A literal guard matches, waits or fails as `starts_with` both ways says,
/// for literals of 0 to 24 bytes at every position of texts that match
/// them in part.
#[test]
fn literal_guard_equals_starts_with() {
    use crate::machine::{lit, G};
    let text = "<|channel|>commentary to=functions.save<|channel|>";
    for n in 0..=24 {
        let literal = &text[..n];
        for end in 0..=text.len() {
            let t = &text[..end];
            for pos in 0..=end {
                for last in [false, true] {
                    let rest = &t.as_bytes()[pos..];
                    let want = if rest.starts_with(literal.as_bytes()) {
                        G::Match(pos + n)
                    } else if !last && literal.as_bytes().starts_with(rest) {
                        G::More
                    } else {
                        G::No
                    };
                    assert_eq!(lit(t, pos, literal, last), want, "{literal:?} at {pos} of {t:?}");
                }
            }
        }
    }
}

/// A stop set's search (first bytes, then pairs of first bytes in a long
/// text dense in them) finds the first stop a naive search finds, for
/// sets of one to five stops over texts full of near misses.
#[test]
fn stop_search_equals_a_naive_search() {
    use crate::table::StopSet;
    let sets: [&'static [&'static str]; 5] = [
        &["</parameter>"],
        &["</parameter>", "</function>"],
        &["<|end|>", "<|call|>", "<|return|>"],
        &["<", "</x>"],
        &["<a>", "<b>", "[c]", "{d}", "(e)"],
    ];
    let alphabet: [&str; 10] = ["<", "/", "a", "<|", "</", "</parameter", "</function>", "x < y", "é", "\n"];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for round in 0..3000 {
        crate::xorshift(&mut state);
        let pieces = 20 + (state % 200) as usize;
        let mut text = String::new();
        let mut s = state;
        for _ in 0..pieces {
            s = s.rotate_left(7) ^ 0x9e37_79b9_7f4a_7c15;
            text.push_str(alphabet[(s % alphabet.len() as u64) as usize]);
        }
        let stops: &'static [&'static str] = sets[round % sets.len()];
        // Sometimes one of the stops, somewhere late.
        if round % 3 == 0 {
            let at = text.len() * 3 / 4;
            let at = (0..=at).rev().find(|&k| text.is_char_boundary(k)).unwrap_or(0);
            text.insert_str(at, stops[round % stops.len()]);
        }
        let set = StopSet::new(stops);
        let hay = text.as_bytes();
        let naive = (0..hay.len()).find(|&i| stops.iter().any(|s| hay[i..].starts_with(s.as_bytes())));
        assert_eq!(set.find(hay), naive, "{stops:?} in {text:?}");
    }
}

/// The end of a chunk that starts a stop, found from the positions of the
/// stops' first bytes, is the one comparing every stop at every position
/// finds (and so is the longest end that is a stop's start): over chunks
/// of near misses up to 40 bytes (past 32 the positions' version compares
/// every stop), with sets of no to five first bytes (more than four: every
/// position is tried), empty stops, and a stop inside another's start.
#[test]
fn stop_start_at_end_equals_comparing_every_stop() {
    use crate::machine::{partial, stop_start_at_end, stop_start_at_end_by_stops};
    use crate::table::StopSet;
    let sets: [&'static [&'static str]; 9] = [
        &["</think>"],
        &["</x>", ""],
        &[""],
        // A whole stop inside another's start (`\n</think>` cut off).
        &["\n</think>\n\n", "</think>"],
        &["\n</think>", "<tool_call>"],
        &["<|end|>", "<|call|>", "<|return|>", "<|channel|>"],
        &["<", "</x>", ""],
        &["<a>", "<b>", "[c]", "{d}", "(e)", "|f|"],
        &["\n</parameter>", "</parameter>", "</function>"],
    ];
    let alphabet: [&str; 13] = ["<", "/", "a", "<|", "</", "</thi", "<|en", "\n", "[c", "x", "<tool_ca", "|f", "\n</think>"];
    let mut state = 0x6a09_e667_f3bc_c909u64;
    let mut found = 0;
    for round in 0..60_000 {
        crate::xorshift(&mut state);
        let stops: &'static [&'static str] = sets[round % sets.len()];
        let mut chunk = String::new();
        let mut s = state;
        while chunk.len() < (state % 41) as usize {
            s = s.rotate_left(11) ^ 0x9e37_79b9_7f4a_7c15;
            chunk.push_str(alphabet[(s % alphabet.len() as u64) as usize]);
        }
        // Sometimes a whole stop, or a stop's start, at the end.
        match round % 4 {
            0 => chunk.push_str(stops[round / 4 % stops.len()]),
            1 => {
                let stop = stops[round / 4 % stops.len()];
                chunk.push_str(&stop[..stop.len() / 2]);
            }
            _ => {}
        }
        let want = stop_start_at_end_by_stops(chunk.as_bytes(), stops);
        found += usize::from(want.is_some());
        let set = StopSet::new(stops);
        assert_eq!(stop_start_at_end(chunk.as_bytes(), &set), want, "{stops:?} at the end of {chunk:?}");
        assert_eq!(set.partial(chunk.as_bytes()), partial(chunk.as_bytes(), stops), "{stops:?} at the end of {chunk:?}");
    }
    // Both answers are exercised.
    assert!(found > 5_000, "{found}");
}

/// `marker_cut` agrees with a naive reading: `None` when the marker is in
/// the chunk, else the longest end of the chunk that starts it (which is
/// the first position that starts it: no earlier one fits).
#[test]
fn marker_cut_finds_the_start_a_chunk_ends_with() {
    use crate::machine::marker_cut;
    let marker = b"<|\"|>";
    let alphabet: [&[u8]; 6] = [b"<", b"|", b"\"", b"a", b"<|", b">"];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        crate::xorshift(&mut state);
        let mut chunk = Vec::new();
        for k in 0..(state % 6) {
            chunk.extend_from_slice(alphabet[((state >> (8 + 4 * k)) % 6) as usize]);
        }
        let whole = chunk.windows(marker.len()).any(|w| w == marker);
        let naive = (0..chunk.len()).find(|&i| marker.starts_with(&chunk[i..])).map_or(0, |i| chunk.len() - i);
        assert_eq!(marker_cut(&chunk, marker), if whole { None } else { Some(naive) }, "{:?}", String::from_utf8_lossy(&chunk));
    }
    assert_eq!(marker_cut(b"x <", marker), Some(1));
    assert_eq!(marker_cut(b"<|\"", marker), Some(3));
    assert_eq!(marker_cut(b"a<|\"|>b", marker), None);
    assert_eq!(marker_cut(b"<<|", marker), Some(2));
}

/// `may_start_stop`, with a stop set's first bytes and `follow`, is true
/// for every chunk of up to 8 bytes in which a stop starts (whole, or cut
/// off by the chunk's end: what `clear_of_stops` tests), and false where
/// no first byte is followed by a second byte or ends the chunk.
#[test]
fn may_start_stop_misses_no_stop_start() {
    use crate::machine::clear_of_stops;
    use crate::table::StopSet;
    use crate::word::{may_start_stop, Word};
    static SETS: [&[&str]; 5] = [
        &["</parameter>", "</function>", "</tool_call>"],
        &["<tool_call>", "<|im_end|>"],
        &["</think>"],
        &["[TOOL_CALLS]", "</s>"],
        &["<|channel|>", "<|start|>", "<|end|>", "<|call|>"],
    ];
    let alphabet: [&[u8]; 10] = [b"<", b"/", b"|", b"t", b"a", b" ", b"[", b"T", b"s", b"</"];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut rejected = 0;
    for stops in SETS {
        let set = StopSet::new(stops);
        assert!(set.n_firsts <= 2 && set.follow[0] != 0, "{stops:?}");
        let firsts = [set.firsts[0], if set.n_firsts == 2 { set.firsts[1] } else { 0 }];
        for _ in 0..20_000 {
            crate::xorshift(&mut state);
            let mut chunk = Vec::new();
            for k in 0..8 {
                let piece = alphabet[((state >> (6 * k)) % 10) as usize];
                if chunk.len() + piece.len() <= 8 && (k == 0 || (state >> (48 + k)) & 1 == 1) {
                    chunk.extend_from_slice(piece);
                }
            }
            let word = Word::new(&chunk).unwrap();
            let may = may_start_stop(word, firsts, set.follow);
            let first = |b: &u8| firsts.contains(b) && *b != 0;
            let exact = chunk.windows(2).any(|p| first(&p[0]) && set.follow.contains(&p[1]) && p[1] != 0)
                || chunk.last().is_some_and(first);
            assert_eq!(may, exact, "{stops:?} {:?}", String::from_utf8_lossy(&chunk));
            if !clear_of_stops(&chunk, stops) {
                assert!(may, "{stops:?} {:?}", String::from_utf8_lossy(&chunk));
            }
            rejected += usize::from(!may && chunk.iter().any(first));
        }
    }
    // The test reaches chunks that hold a first byte and are cleared.
    assert!(rejected > 1000, "{rejected}");
    // Three second bytes, or a stop of one byte: the first bytes decide.
    assert_eq!(StopSet::new(&["<tool_call>", "<function=", "<|im_end|>"]).follow, [0, 0]);
    assert_eq!(StopSet::new(&["</think>", ">"]).follow, [0, 0]);
}
