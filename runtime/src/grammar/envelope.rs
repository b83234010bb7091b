//! The envelope of a format: what a tool call looks like around its name and arguments.
