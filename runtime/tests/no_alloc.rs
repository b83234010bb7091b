//! The parsing primitives never allocate: a counting global allocator sees
//! no allocation while they work through large inputs in small chunks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use chat_parser_runtime::escape::json_escape;
use chat_parser_runtime::holdback::{find_first, partial_suffix_len, HoldBuf};
use chat_parser_runtime::json::{JsonScanner, Scan};
use chat_parser_runtime::utf8::Utf8Carry;

/// Counts the allocations of the current thread (the test harness may
/// allocate on others meanwhile).
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: no panic when the thread's locals are being torn down.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns how many allocations it made on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// A JSON document of at least 16 KB with every kind of token, in Python
/// syntax when `python` is set.
fn document(python: bool) -> String {
    let (t, f, n, q) = if python {
        ("True", "False", "None", '\'')
    } else {
        ("true", "false", "null", '"')
    };
    let mut doc = String::from("{");
    let mut i = 0;
    while doc.len() < 16 * 1024 {
        if i > 0 {
            doc.push_str(", ");
        }
        doc.push_str(&format!(
            "{q}key {i}{q}: [{i}, -{i}.5e+3, {t}, {f}, {n}, {q}text é€😀 \\n \\u00e9 \\\\ {i}{q}, {{{q}deep{q}: [[[{{}}]]]}}]"
        ));
        i += 1;
    }
    doc.push('}');
    doc
}

#[test]
fn primitives_do_not_allocate() {
    // Everything that allocates is prepared first.
    let json = document(false);
    let python = document(true);
    let text: String =
        "plain text, \"quoted\", a\\b, tab\t, newline\n, ctrl\u{1}, é€😀. ".repeat(300);
    assert!(json.len() >= 16 * 1024 && text.len() >= 16 * 1024);
    let utf8 = text.as_bytes();
    let stops: &[&[u8]] = &[b"</tool_call>", b"</think>", b"<tool_call>"];
    // The counter works (and lazily initialized thread state is warm).
    assert_eq!(
        allocations(|| drop(std::hint::black_box(Vec::<u8>::with_capacity(8)))),
        1
    );

    let mut json_out = 0;
    let mut python_out = 0;
    let mut escaped_out = 0;
    let mut decoded = 0;
    let mut held_max = 0;
    let n = allocations(|| {
        for (doc, out_len) in [(&json, &mut json_out), (&python, &mut python_out)] {
            let mut scanner = JsonScanner::new(doc == &python, true);
            let mut out = |piece: &str| *out_len += piece.len();
            let mut pos = 0;
            let mut result = Scan::NeedMore;
            while pos < doc.len() && result == Scan::NeedMore {
                let mut end = (pos + 4).min(doc.len());
                while !doc.is_char_boundary(end) {
                    end += 1;
                }
                let (consumed, r) = scanner.scan(&doc[pos..end], end == doc.len(), &mut out);
                pos += consumed;
                result = r;
            }
            assert_eq!((result, pos), (Scan::Done, doc.len()));
        }

        json_escape(&text, &mut |piece: &str| escaped_out += piece.len());

        let mut carry = Utf8Carry::new();
        let mut held = HoldBuf::<16>::new();
        for byte in utf8.chunks(1) {
            carry.split(byte).for_each(|piece| {
                decoded += piece.len();
                if !held.push(piece) {
                    held.clear();
                }
                held_max = held_max.max(held.len());
                let _ = find_first(held.as_bytes(), stops);
                let _ = partial_suffix_len(held.as_bytes(), stops);
            });
        }
        decoded += carry.finish().len();
    });
    assert_eq!(n, 0, "allocations while parsing");
    assert_eq!(json_out, json.len());
    assert!(python_out >= python.len());
    assert!(escaped_out > text.len());
    assert_eq!((decoded, held_max), (text.len(), 16));
}
