//! Integration tests of the HTTP transport, in-process, with raw HTTP (one binary, see style).

mod suite;
