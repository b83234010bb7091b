//! Generated parsers never allocate while parsing: zero heap allocations
//! inside `feed` and `finish`, counted by a global allocator.
//!
//! - the four benchmarked templates × three 16 KB shapes (`shapes`), whole
//!   and in 4-byte chunks;
//! - every template in `TEMPLATES` on a short mixed output built from its
//!   own markers (`shapes::mixed_text`), whole, in 4-byte and 1-byte chunks.
//!
//! The counter is per thread (tests run in parallel, and the harness
//! allocates on other threads); parsers are created outside the counted
//! region, as the sink is a `Tally`, which does not allocate.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use chat_parser_bench::parsers::{AnyParser, TEMPLATES};
use chat_parser_bench::{run_parser, shapes, Tally};

struct CountingAlloc;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call is forwarded unchanged to `System`; counting touches
// only a const-initialised thread-local `Cell` (no allocation, no destructor).
unsafe impl GlobalAlloc for CountingAlloc {
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

/// Allocations on this thread while `f` runs.
fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// Allocations made by feeding `text` in `chunk`-byte pieces and finishing.
fn parse_allocations(parser: &mut AnyParser<'_>, text: &[u8], chunk: usize) -> (usize, Tally) {
    let mut tally = Tally::default();
    let n = allocations(|| run_parser(parser, text, chunk, false, &mut tally));
    (n, tally)
}

#[test]
fn the_counter_counts() {
    assert_eq!(allocations(|| drop(std::hint::black_box(vec![1u8; 10]))), 1);
}

#[test]
fn benchmark_shapes_allocate_nothing() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in shapes::cases() {
        for chunk in [usize::MAX, 4] {
            let Some(mut parser) = AnyParser::new(case.family.file, shapes::options()) else {
                println!("no_alloc: skipped {} (no generated parser; corpus not found?)", case.name);
                break;
            };
            let (n, tally) = parse_allocations(&mut parser, case.text.as_bytes(), chunk);
            assert!(tally.events > 0, "{}: no events", case.name);
            checked += 1;
            if n != 0 {
                failures.push(format!("{} in {chunk}-byte chunks: {n} allocations", case.name));
            }
        }
    }
    println!("no_alloc: {checked} benchmark parses, {} allocate", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_template_allocates_nothing_on_mixed_output() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for &file in TEMPLATES {
        let Ok(spec) = chat_parser_bench::spec(file) else { continue };
        let text = shapes::mixed_text(&spec);
        for options in [shapes::options(), chat_parser_runtime::Options::default()] {
            for chunk in [usize::MAX, 4, 1] {
                let mut parser = AnyParser::new(file, options).expect("every listed template has a parser");
                let (n, _) = parse_allocations(&mut parser, text.as_bytes(), chunk);
                if n != 0 {
                    failures.push(format!("{file} in {chunk}-byte chunks (tools: {}): {n} allocations", options.tools.len()));
                }
            }
        }
        checked += 1;
    }
    println!("no_alloc: {checked} of {} templates on mixed output, {} parses allocate", TEMPLATES.len(), failures.len());
    assert!(checked > 0, "no template found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
