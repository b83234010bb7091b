//! JSON schema to grammar rules (see the module docs of `grammar`).
