use phidiff::differentiate;
use phidiff_fixture_geom::smooth;

// A plain function of another crate that phidiff reads but does not inline (a `return`
// in a loop), with no rules there: one phidiff error at the call, with both fixes.
#[differentiate(forward, reverse)]
fn f(v: &[f64], t: f64) -> f64 {
    t * smooth::first_above(v, t)
}

fn main() {}
