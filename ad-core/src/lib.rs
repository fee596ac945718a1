pub mod __private {}
