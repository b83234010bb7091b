//! A minimal JSON value for schemas given at run time.
