//! Generated parsers for every template the build script found (see
//! `build.rs`), picked by file name, and what the comparison harness needs
//! to drive them from a `parse` request.

#[allow(clippy::all)]
pub mod parsers {
    include!(concat!(env!("OUT_DIR"), "/parsers.rs"));
}
