//! Compile-fail and pass cases of `#[differentiate]`: every unsupported construct is a
//! compile error at the user's span, and the generated functions have the contract's
//! signatures. Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test ui`
//! and read them: each must point at the offending construct.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
